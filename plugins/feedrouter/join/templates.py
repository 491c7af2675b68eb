"""Query templates of join subscriptions (paper 001, Hong et al., SIGMOD 2007, sections 4.1-4.4).

The value joins of a subscription form a *join graph*: one tree per side, rooted at the side's bound
node (its *anchor*) and made of the steps of the compared leaf paths, plus one value edge per
comparison. :func:`reduce` keeps only what stage 2 has to check (the paper's graph minor), and the
reduced graph with its edge labels abstracted into metavariables is the subscription's
:class:`Template`. All subscriptions of one template are evaluated by one conjunctive query over a
table holding one row of bindings per subscription (the paper's R_T, see :class:`RTRow`).

>>> same_author = ValueJoin(LeafPath(Side.LEFT, "author", True), LeafPath(Side.RIGHT, "a", False))
>>> other_author = ValueJoin(LeafPath(Side.LEFT, "author", True), LeafPath(Side.RIGHT, "c", False))
>>> template, bindings = classify([same_author, other_author])
>>> template.key
'L>l1 R>r1 R>r2 | l1=r1 l1=r2'
>>> bindings
('author', 'a', 'c')
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from enum import Enum
from typing import TypeVar

MAX_VALUE_JOINS = 6  # canonical forms are found by brute force: 6! orders of one level at worst (8!: 0.6 s)

_A = TypeVar("_A", bound=Hashable)
_B = TypeVar("_B", bound=Hashable)

# One bound node's witnesses: leaf path -> the string values of the nodes the path selects from it.
PathValues = Mapping[str, AbstractSet[str]]
# One side's witnesses: bound node -> its path values.
Witnesses = Mapping[_A, PathValues]

_NOTHING: frozenset[str] = frozenset()


class Side(Enum):
    """The two sides of a join; not interchangeable, since FOLLOWED BY is directional."""

    LEFT = "left"
    RIGHT = "right"


_ANCHOR_IDS = {Side.LEFT: 0, Side.RIGHT: 1}
_ANCHOR_NAMES = {Side.LEFT: "L", Side.RIGHT: "R"}


@dataclass(frozen=True)
class LeafPath:
    """One compared path, relative to its side's bound node.

    Attributes:
        side: The side whose bound node the path starts from.
        path: The path text (``author``, ``info/title``, ``.``, ``@id``); compared textually, so the
            caller normalizes it.
        single: True when the path and each of its prefixes select at most one node per bound node
            (decided from the DTD); only then may comparisons share its node.
    """

    side: Side
    path: str
    single: bool

    def __post_init__(self) -> None:
        if not self.path or self.path.startswith("/") or self.path.endswith("/"):
            raise ValueError(f"leaf path {self.path!r} is not a path relative to the bound node")


@dataclass(frozen=True)
class ValueJoin:
    """One general comparison ``$left/path = $right/path`` (string equality, existential)."""

    left: LeafPath
    right: LeafPath

    def __post_init__(self) -> None:
        if self.left.side is not Side.LEFT or self.right.side is not Side.RIGHT:
            raise ValueError(f"a value join compares a left path with a right path, not {self}")


@dataclass(frozen=True)
class Node:
    """A node of a join graph.

    Attributes:
        id: Unique in its graph; a parent's id is smaller than its children's.
        side: The tree the node belongs to.
        parent: The parent's id, None for the side's anchor (its bound node).
        label: The path from the parent to this node ("" for an anchor).
    """

    id: int
    side: Side
    parent: int | None
    label: str


@dataclass(frozen=True)
class JoinGraph:
    """Two trees rooted at the anchors (ids 0 and 1) plus value edges (left id, right id)."""

    nodes: tuple[Node, ...]
    value_edges: tuple[tuple[int, int], ...]

    def node(self, node_id: int) -> Node:
        """The node with this id."""
        return next(node for node in self.nodes if node.id == node_id)

    def children(self, node_id: int) -> tuple[Node, ...]:
        """The nodes whose parent is this one."""
        return tuple(node for node in self.nodes if node.parent == node_id)

    def chain(self, node_id: int) -> tuple[int, ...]:
        """The ids from the anchor down to this node."""
        parent = self.node(node_id).parent
        return (node_id,) if parent is None else (*self.chain(parent), node_id)

    def joined(self) -> frozenset[int]:
        """The ids of the nodes that take part in a value join."""
        return frozenset(itertools.chain.from_iterable(self.value_edges))


def join_graph(joins: Iterable[ValueJoin]) -> JoinGraph:
    """Build the join graph of a subscription's value joins, independently of their order.

    Repeated comparisons count once. Single leaf paths of a side share their node and their
    prefixes' nodes; every other comparison gets a leaf of its own right under the anchor.
    """
    builder = _GraphBuilder()
    ordered = sorted(set(joins), key=_join_order)
    edges = {(builder.leaf(join.left), builder.leaf(join.right)) for join in ordered}
    return JoinGraph(tuple(builder.nodes), tuple(sorted(edges)))


def _join_order(join: ValueJoin) -> tuple[str, bool, str, bool]:
    return (join.left.path, join.left.single, join.right.path, join.right.single)


class _GraphBuilder:
    """Numbers nodes in creation order, so parents precede children."""

    def __init__(self) -> None:
        self.nodes = [Node(_ANCHOR_IDS[side], side, None, "") for side in Side]
        self._shared: dict[tuple[Side, tuple[str, ...]], int] = {}

    def leaf(self, leaf: LeafPath) -> int:
        parent = _ANCHOR_IDS[leaf.side]
        if not leaf.single:
            return self._add(leaf.side, parent, leaf.path)
        steps = _steps(leaf.path)
        for depth in range(1, len(steps) + 1):
            key = (leaf.side, steps[:depth])
            if key not in self._shared:
                self._shared[key] = self._add(leaf.side, parent, steps[depth - 1])
            parent = self._shared[key]
        return parent

    def _add(self, side: Side, parent: int, label: str) -> int:
        self.nodes.append(Node(len(self.nodes), side, parent, label))
        return len(self.nodes) - 1


def _steps(path: str) -> tuple[str, ...]:
    """Split a path at its top-level slashes so that ``"/".join(steps) == path``.

    A ``//`` leaves its second slash on the next step (``a//b`` -> ``a``, ``/b``), and a leading
    ``.`` stays on the step after it: ``./a`` and ``.//a`` start from the bound node itself.
    """
    raw: list[str] = []
    depth, quote, start = 0, "", 0
    for at, char in enumerate(path):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[({":  # '{': a name's URI, Q{http://...}local, holds slashes of its own
            depth += 1
        elif char in "])}":
            depth -= 1
        elif char == "/" and depth == 0:
            raw.append(path[start:at])
            start = at + 1
    raw.append(path[start:])
    return _fold_descendants(raw)


def _fold_descendants(raw: list[str]) -> tuple[str, ...]:
    steps: list[str] = []
    pending = ""
    for step in raw:
        if step:
            steps.append(pending + step)
            pending = ""
        else:
            pending += "/"
    if len(steps) > 1 and steps[0] == ".":
        steps[:2] = [f"./{steps[1]}"]
    return tuple(steps)


def _drop_unjoined_leaves(graph: JoinGraph) -> JoinGraph:
    """Rule (a): drop leaves in no value join, again and again (anchors stay)."""
    joined = graph.joined()
    while True:
        parents = {node.parent for node in graph.nodes}
        idle = {n.id for n in graph.nodes if n.parent is not None and n.id not in parents | joined}
        if not idle:
            return graph
        graph = replace(graph, nodes=tuple(n for n in graph.nodes if n.id not in idle))


def _drop_above_lca(graph: JoinGraph) -> JoinGraph:
    """Rule (b): keep the descendants-or-self of the least common ancestor of each tree's terminals.

    The paper's terminals are the joined leaves alone, so its rule may drop the top of a tree, the
    bound variable included: stage 1 has checked that structure, the value joins need only what
    lies below the ancestor. Here the anchor is a terminal too, because stage 2's witnesses are
    keyed by the bound node (each leaf's values are looked up from it) and a result is a (left
    bound node, right bound node) pair: without the anchor there is nothing to report. Each tree
    is rooted at its anchor, so the ancestor is the anchor and the rule keeps every node; what the
    paper's rule drops in practice, the binding path above the bound node, never enters the graph
    (stage 1 checks it). The cost: the chain from an anchor down to its leaves' ancestor stays (the
    ``info`` above ``info/title`` and ``info/author``), so deep schemas get more templates than the
    paper counts. The rule stays so that a graph grown above its anchors reduces as the paper says.
    """
    joined = graph.joined()
    keep: set[int] = set()
    for side in Side:
        terminals = [_ANCHOR_IDS[side], *(n.id for n in graph.nodes if n.side is side and n.id in joined)]
        top = _common_prefix([graph.chain(node) for node in terminals])[-1]
        keep.update(n.id for n in graph.nodes if n.side is side and top in graph.chain(n.id))
    return replace(graph, nodes=tuple(n for n in graph.nodes if n.id in keep))


def _common_prefix(chains: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    prefix: list[int] = []
    for column in zip(*chains, strict=False):  # as long as the shortest chain
        if len(set(column)) > 1:
            break
        prefix.append(column[0])
    return tuple(prefix)


def _splice_chains(graph: JoinGraph) -> JoinGraph:
    """Rule (c): replace an unjoined inner node with one child by one edge from its parent."""
    while (middle := _spliceable(graph)) is not None:
        (child,) = graph.children(middle.id)
        spliced = replace(child, parent=middle.parent, label=f"{middle.label}/{child.label}")
        nodes = (spliced if n.id == child.id else n for n in graph.nodes if n.id != middle.id)
        graph = replace(graph, nodes=tuple(nodes))
    return graph


def _spliceable(graph: JoinGraph) -> Node | None:
    joined = graph.joined()
    for node in graph.nodes:
        if node.parent is not None and node.id not in joined and len(graph.children(node.id)) == 1:
            return node
    return None


REDUCTIONS = (_drop_unjoined_leaves, _drop_above_lca, _splice_chains)


def reduce(graph: JoinGraph) -> JoinGraph:
    """Reduce a join graph to the minor stage 2 evaluates (the paper's three rules, in order).

    The reduced graph selects the same (left anchor, right anchor) pairs: the rules drop no
    joined node and no anchor, and splicing keeps each joined node's path from its anchor.
    """
    for rule in REDUCTIONS:
        graph = rule(graph)
    return graph


@dataclass(frozen=True)
class Template:
    """A reduced join graph up to isomorphism, its edge labels replaced by metavariables.

    Metavariable ``l<i>``/``r<i>`` names a non-anchor node of the left/right tree and stands for the
    path on the edge from its parent; ``L`` and ``R`` are the anchors. Parents precede children.

    Attributes:
        variables: The metavariables, left ones first: the order of :meth:`bindings`.
        parents: Each metavariable's parent (a metavariable, ``L`` or ``R``).
        value_edges: The value joins as (left metavariable, right metavariable) pairs.
    """

    variables: tuple[str, ...]
    parents: tuple[str, ...]
    value_edges: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        """The canonical text: equal for isomorphic reduced graphs, different otherwise."""
        tree = " ".join(f"{parent}>{var}" for var, parent in zip(self.variables, self.parents, strict=True))
        values = " ".join(f"{left}={right}" for left, right in self.value_edges)
        return f"{tree or '-'} | {values or '-'}"

    def columns(self) -> tuple[str, ...]:
        """The column names of this template's R_T table."""
        return ("qid", *self.variables, "window")

    def bindings(self, joins: Iterable[ValueJoin]) -> tuple[str, ...]:
        """The paths the metavariables stand for in a subscription of this template.

        Raises:
            ValueError: If the joins belong to another template.
        """
        template, bindings = classify(joins)
        if template != self:
            raise ValueError(f"the joins have template {template.key!r}, not {self.key!r}")
        return bindings

    def row(self, qid: int, joins: Iterable[ValueJoin], window: float) -> RTRow:
        """The subscription's row of this template's R_T table."""
        return RTRow(qid, self.bindings(joins), window)

    def paths(self, bindings: Sequence[str]) -> dict[str, str]:
        """Each metavariable's path from its anchor, given a row of bindings."""
        if len(bindings) != len(self.variables):
            count = len(self.variables)
            raise ValueError(f"{len(bindings)} bindings for the {count} variables of {self.key!r}")
        full: dict[str, str] = {}
        for var, parent, label in zip(self.variables, self.parents, bindings, strict=True):
            full[var] = f"{full[parent]}/{label}" if parent in full else label
        return full

    def describe(self, name: str = "template") -> str:
        """One line for ``explain()``: each tree's size and the value edges."""
        trees = ", ".join(self._describe_tree(side) for side in Side)
        values = " ".join(f"{left}={right}" for left, right in self.value_edges) or "none"
        return f"{name}: {trees}, value edges {values}"

    def _describe_tree(self, side: Side) -> str:
        joined = set(itertools.chain.from_iterable(self.value_edges))
        names = [var for var in self.variables if _side_of(var) is side]
        leaves = sum(var in joined for var in names)
        text = f"{side.value} anchor with {_plural(leaves, 'leaf', 'leaves')}"
        inner = len(names) - leaves
        return text + (f" and {_plural(inner, 'intermediate node', 'intermediate nodes')}" if inner else "")


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _side_of(var: str) -> Side:
    return Side.LEFT if var[0] in "lL" else Side.RIGHT


@dataclass(frozen=True)
class RTRow:
    """One subscription's row of its template's R_T table; :meth:`as_tuple` gives the row itself."""

    qid: int
    bindings: tuple[str, ...]
    window: float

    def as_tuple(self) -> tuple[int | str | float, ...]:
        """The row as ``(qid, *bindings, window)``, in the order of :meth:`Template.columns`."""
        return (self.qid, *self.bindings, self.window)


def template_of(joins: Iterable[ValueJoin]) -> Template:
    """The template of a subscription's value joins."""
    return classify(joins)[0]


def classify(joins: Iterable[ValueJoin]) -> tuple[Template, tuple[str, ...]]:
    """The template of a subscription's value joins and its bindings (one R_T row without qid, window).

    Raises:
        ValueError: If there are more than ``MAX_VALUE_JOINS`` distinct value joins.
    """
    graph = reduce(join_graph(joins))
    if len(graph.value_edges) > MAX_VALUE_JOINS:
        raise ValueError(f"{len(graph.value_edges)} value joins: a template has at most {MAX_VALUE_JOINS}")
    return _instantiate(graph, _canonical_order(graph))


@dataclass(frozen=True)
class _Shape:
    """The reduced graph as lookup tables for the canonical search."""

    parent: Mapping[int, int]
    kids: Mapping[int, tuple[int, ...]]
    partners: Mapping[int, tuple[int, ...]]  # right node -> the left nodes it is value-joined with
    right: tuple[int, ...]  # the right tree's ids, anchor first: parents before children
    left_levels: tuple[tuple[int, ...], ...]  # left non-anchors grouped by an isomorphism invariant


def _shape(graph: JoinGraph) -> _Shape:
    kids: dict[int, list[int]] = defaultdict(list)
    partners: dict[int, list[int]] = defaultdict(list)
    for node in graph.nodes:
        if node.parent is not None:
            kids[node.parent].append(node.id)
    for left, right in graph.value_edges:
        partners[right].append(left)
    return _Shape(
        parent={node.id: node.parent for node in graph.nodes if node.parent is not None},
        kids={node.id: tuple(kids[node.id]) for node in graph.nodes},
        partners={node.id: tuple(partners[node.id]) for node in graph.nodes},
        right=tuple(node.id for node in graph.nodes if node.side is Side.RIGHT),
        left_levels=_left_levels(graph, kids),
    )


def _left_levels(graph: JoinGraph, kids: Mapping[int, list[int]]) -> tuple[tuple[int, ...], ...]:
    degree = Counter(left for left, _ in graph.value_edges)
    levels: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for node in graph.nodes:
        if node.side is Side.LEFT and node.parent is not None:
            levels[(len(graph.chain(node.id)), len(kids[node.id]), degree[node.id])].append(node.id)
    return tuple(tuple(levels[invariant]) for invariant in sorted(levels))


def _canonical_order(graph: JoinGraph) -> tuple[int, ...]:
    """The non-anchor node ids in canonical order: left nodes, then right nodes in preorder.

    The left nodes are numbered by brute force over the orders within each level; for each such
    numbering the right tree is canonized in linear time (AHU encoding, each node labelled with the
    numbers of its left partners). The numbering with the least encoding wins, and as that encoding
    describes the whole graph, two graphs get the same one exactly when they are isomorphic.
    """
    shape = _shape(graph)
    orders = itertools.product(*(itertools.permutations(level) for level in shape.left_levels))
    lefts = (tuple(itertools.chain.from_iterable(order)) for order in orders)
    left = min(lefts, key=lambda candidate: _encoding(shape, candidate))
    codes = _right_codes(shape, _numbers(left))
    return left + _preorder(shape, codes, _ANCHOR_IDS[Side.RIGHT])


def _numbers(left: tuple[int, ...]) -> dict[int, int]:
    return {_ANCHOR_IDS[Side.LEFT]: 0} | {node: number for number, node in enumerate(left, 1)}


def _encoding(shape: _Shape, left: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    numbers = _numbers(left)
    parents = tuple(numbers[shape.parent[node]] for node in left)
    return parents, _right_codes(shape, numbers)[_ANCHOR_IDS[Side.RIGHT]]


def _right_codes(shape: _Shape, numbers: Mapping[int, int]) -> dict[int, str]:
    codes: dict[int, str] = {}
    for node in reversed(shape.right):  # children before parents
        partners = ",".join(str(n) for n in sorted(numbers[left] for left in shape.partners[node]))
        codes[node] = f"({partners}:{''.join(sorted(codes[kid] for kid in shape.kids[node]))})"
    return codes


def _preorder(shape: _Shape, codes: Mapping[int, str], node: int) -> tuple[int, ...]:
    # Siblings with equal codes are interchangeable (swapping them is an automorphism).
    order: tuple[int, ...] = ()
    for kid in sorted(shape.kids[node], key=codes.__getitem__):
        order += (kid, *_preorder(shape, codes, kid))
    return order


def _instantiate(graph: JoinGraph, order: tuple[int, ...]) -> tuple[Template, tuple[str, ...]]:
    names = {_ANCHOR_IDS[side]: _ANCHOR_NAMES[side] for side in Side}
    counts: Counter[Side] = Counter()
    for node_id in order:
        side = graph.node(node_id).side
        counts[side] += 1
        names[node_id] = f"{_ANCHOR_NAMES[side].lower()}{counts[side]}"
    position = {node_id: at for at, node_id in enumerate(order)}
    edges = sorted(graph.value_edges, key=lambda edge: (position[edge[0]], position[edge[1]]))
    template = Template(
        variables=tuple(names[node_id] for node_id in order),
        parents=tuple(names[_parent(graph, node_id)] for node_id in order),
        value_edges=tuple((names[left], names[right]) for left, right in edges),
    )
    return template, tuple(graph.node(node_id).label for node_id in order)


def _parent(graph: JoinGraph, node_id: int) -> int:
    parent = graph.node(node_id).parent
    assert parent is not None, "anchors are not metavariables"
    return parent


def pairs_of(joins: Iterable[ValueJoin], left: Witnesses[_A], right: Witnesses[_B]) -> set[tuple[_A, _B]]:
    """The reference result: the anchor pairs satisfying every comparison, each one existentially.

    Args:
        joins: The subscription's value joins, unreduced.
        left: For each left bound node, the string values each leaf path selects from it.
        right: The same for the right bound nodes.
    """
    joins = tuple(joins)
    return {
        (left_anchor, right_anchor)
        for left_anchor, left_paths in left.items()
        for right_anchor, right_paths in right.items()
        if all(_compares(join, left_paths, right_paths) for join in joins)
    }


def _compares(join: ValueJoin, left: PathValues, right: PathValues) -> bool:
    return not left.get(join.left.path, _NOTHING).isdisjoint(right.get(join.right.path, _NOTHING))


def template_pairs(
    template: Template, bindings: Sequence[str], left: Witnesses[_A], right: Witnesses[_B]
) -> set[tuple[_A, _B]]:
    """The anchor pairs the template's conjunctive query selects for one row of bindings.

    Each joined metavariable is one variable of the query, bound to one of its node's values: a
    connected group of value edges holds when all its nodes share a value. Only single leaves
    have several edges, and they have at most one value, so this is what the comparisons say.
    """
    paths = template.paths(bindings)
    groups = _components(template.value_edges)
    return {
        (left_anchor, right_anchor)
        for left_anchor, left_paths in left.items()
        for right_anchor, right_paths in right.items()
        if all(_agree(group, paths, left_paths, right_paths) for group in groups)
    }


def _components(edges: Iterable[tuple[str, str]]) -> list[frozenset[str]]:
    groups: list[frozenset[str]] = []
    for edge in edges:
        touching = [group for group in groups if not group.isdisjoint(edge)]
        groups = [group for group in groups if group not in touching]
        groups.append(frozenset(edge).union(*touching))
    return groups


def _agree(group: frozenset[str], paths: Mapping[str, str], left: PathValues, right: PathValues) -> bool:
    common: set[str] | None = None
    for var in group:
        values = (left if _side_of(var) is Side.LEFT else right).get(paths[var], _NOTHING)
        common = set(values) if common is None else common & values
    return bool(common)
