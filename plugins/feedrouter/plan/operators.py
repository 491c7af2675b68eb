"""Relational post-processing operators over path-tuple streams (paper 000 §3).

A :class:`PatternPlan` turns the engine's stream for one navigation path into the tuples that satisfy
the pattern's tests and branches: Selection first, then one join per branch (a semijoin against the
branch's own plan when its path is in the NFA, a Where-Filter tree search when it is not), then
DupElim where duplicates can arise. Plans are interned by the planner, and the results that several
subscriptions consume (branch key sets, return groups) are cached per document in the context
(:class:`~feedrouter.plan.context.PlanCaches`), so identical sub-plans run once per document.

A path with two ``//`` steps or more may have depth^k tuples per node on a recursive document. Where
a document gives it many, its plan runs on node sets instead (:mod:`feedrouter.plan.nodesets`): each
operator becomes the test it puts on its field's node (:meth:`node_tests`), and the plan answers the
same questions (bindings, key sets, groups) in time linear in elements x steps.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

from feedrouter.engine.nfa import tag_matches
from feedrouter.engine.runtime import PathTuple
from feedrouter.lang.ast import Axis
from feedrouter.plan.context import Checker, DocumentContext, checker
from feedrouter.plan.nodesets import NodeFilter, Step, downward, forward, is_recursive, qualifying, steps_of
from feedrouter.plan.patterns import PathPattern, format_pattern
from feedrouter.plan.profile import Profiler
from feedrouter.plan.search import branch_holds

#: A field and what its node must pass: one operator's share of a plan evaluated by node sets.
NodeTest = tuple[int, Callable[[int], bool]]


class Selection:
    """Keeps the tuples whose nodes pass the local tests of every tested field."""

    category = "Selection"

    def __init__(self, pattern: PathPattern) -> None:
        self.fields = tuple((i, pattern.tests[i]) for i in pattern.tested_fields)
        self._compile()

    def _compile(self) -> None:
        self._checks = tuple((i, checker(test)) for i, tests in self.fields for test in tests)

    def __getstate__(self) -> dict:
        return {"fields": self.fields}  # compiled checks are closures: rebuilt after unpickling

    def __setstate__(self, state: dict) -> None:
        self.fields = state["fields"]
        self._compile()

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        outcome, kept = ctx.outcome, []
        for t in tuples:
            for i, check in self._checks:
                if not outcome(check, t[i]):
                    break
            else:
                kept.append(t)
        return kept

    def node_tests(self, ctx: DocumentContext) -> list[NodeTest]:
        return [(i, _passes(ctx, check)) for i, check in self._checks]

    def describe(self) -> str:
        return (
            "Selection(" + "; ".join(f"${i + 1}: " + ", ".join(map(str, ts)) for i, ts in self.fields) + ")"
        )


def _passes(ctx: DocumentContext, check: Checker) -> Callable[[int], bool]:
    """A node test running one local test's checker through the document's outcomes."""
    outcome = ctx.outcome
    return lambda nid: outcome(check, nid)


class DupElimScan:
    """Drops tuples repeating the previous tuple's node in ``field``: the stream is ordered on it."""

    category = "DupElim"

    def __init__(self, field: int) -> None:
        self.field = field

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        out, previous, f = [], -1, self.field
        for t in tuples:
            if t[f] != previous:
                out.append(t)
                previous = t[f]
        return out

    def node_tests(self, ctx: DocumentContext) -> list[NodeTest]:
        return []  # node sets hold no duplicates

    def describe(self) -> str:
        return f"DupElim[scan](${self.field + 1})"


class _SemiJoin:
    """Left tuples whose node in ``field`` has a qualifying match of the right plan."""

    category = "SemiJoin"
    method = ""

    def __init__(self, field: int, right: PatternPlan) -> None:
        self.field, self.right = field, right

    def node_tests(self, ctx: DocumentContext) -> list[NodeTest]:
        right, field = self.right, self.field
        keys: set[int] | None = None

        def joined(nid: int) -> bool:
            nonlocal keys
            if keys is None:  # built when a node first reaches this field, not before
                keys = right.key_set(ctx, field)
            return nid in keys

        return [(field, joined)]

    def describe(self) -> str:
        return f"SemiJoin[{self.method}](${self.field + 1}, {format_pattern(self.right.pattern)})"


class SemiJoinHash(_SemiJoin):
    """Probes the set of the right plan's join nodes: any order will do."""

    method = "hash"

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        if not tuples:
            return tuples
        keys = self.right.key_set(ctx, self.field)
        f = self.field
        return [t for t in tuples if t[f] in keys]


class SemiJoinMerge(_SemiJoin):
    """Merges with the right plan's join nodes: both inputs are ordered on ``field`` (Claims 4, 5)."""

    method = "merge"

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        if not tuples:
            return tuples
        keys = self.right.key_list(ctx, self.field)
        out, f, j, n = [], self.field, 0, len(keys)
        for t in tuples:
            while j < n and keys[j] < t[f]:
                j += 1
            if j < n and keys[j] == t[f]:
                out.append(t)
        return out


class AntiSemiJoin(_SemiJoin):
    """Left tuples whose node in ``field`` has NO qualifying match of the right plan (``not(p)``):
    the right plan's key set is shared with every semijoin on the same branch."""

    method = "hash, anti"

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        if not tuples:
            return tuples
        keys = self.right.key_set(ctx, self.field)
        f = self.field
        return [t for t in tuples if t[f] not in keys]

    def node_tests(self, ctx: DocumentContext) -> list[NodeTest]:
        ((field, joined),) = super().node_tests(ctx)
        return [(field, lambda nid: not joined(nid))]

    def describe(self) -> str:
        return f"AntiSemiJoin[hash](${self.field + 1}, {format_pattern(self.right.pattern)})"


class WhereFilter:
    """Checks a branch by searching the document tree below the node of ``field`` (PathSharing-F);
    ``negated``: the branch must have no match there."""

    category = "Where-Filter"
    negated = False  # a class default: plans pickled before negation read False

    def __init__(self, field: int, branch: PathPattern, negated: bool = False) -> None:
        self.field, self.branch, self.negated = field, branch, negated

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        f, branch, negated = self.field, self.branch, self.negated
        return [t for t in tuples if branch_holds(ctx, t[f], branch) != negated]

    def node_tests(self, ctx: DocumentContext) -> list[NodeTest]:
        branch, negated = self.branch, self.negated
        return [(self.field, lambda nid: branch_holds(ctx, nid, branch) != negated)]

    def describe(self) -> str:
        name = "WhereFilter[tree, not]" if self.negated else "WhereFilter[tree]"
        return f"{name}(${self.field + 1}, {format_pattern(self.branch)})"


class PatternPlan:
    """The operators that turn the stream of one path id into the tuples satisfying a pattern.

    A pattern whose path has two ``//`` steps or more is *recursive*: its stream may hold depth^k
    tuples per node. On a document where it holds too many (:meth:`DocumentContext.small_stream`),
    its plan is evaluated by node sets instead (:mod:`feedrouter.plan.nodesets`), each operator
    contributing the test it puts on its field's node. The answers (key sets, bindings, groups) are
    the same; :meth:`tuples` stays the reference.
    """

    # class-level defaults: plans unpickled from artifacts that predate them compute them on use
    _steps: tuple[Step, ...] | None = None
    _recursive: bool | None = None

    def __init__(
        self,
        pattern: PathPattern,
        pid: int,
        operators: tuple,
        notes: list[str] | None = None,
        main: bool = False,
    ) -> None:
        self.pattern = pattern
        self.main = main  # a subscription's binding plan (with DupElim), not a branch or return plan
        self.pid = pid
        self.operators = operators
        self.notes = notes or []  # the claims that shaped this plan, for explain()
        self._steps = steps_of(pattern.nav)
        self._recursive = is_recursive(self._steps)

    @property
    def recursive(self) -> bool:
        """True when the plan's path has two ``//`` steps or more (more than one tuple per node)."""
        recursive = self._recursive
        if recursive is None:
            self._steps = steps_of(self.pattern.nav)
            recursive = self._recursive = is_recursive(self._steps)
        return recursive

    def by_sets(self, ctx: DocumentContext) -> bool:
        """True when this document's tuples of a recursive plan are too many: node sets instead."""
        return self.recursive and ctx.small_stream(self.pid) is None

    def tuples(self, ctx: DocumentContext) -> list[PathTuple]:
        if ctx.profiler is not None:
            return self._profiled_tuples(ctx, ctx.profiler)
        tuples = ctx.stream(self.pid)
        for op in self.operators:
            if not tuples:
                break
            ctx.charge(len(tuples))
            tuples = op.apply(ctx, tuples)
        return tuples

    def _profiled_tuples(self, ctx: DocumentContext, profiler: Profiler) -> list[PathTuple]:
        with profiler.measure("path-tuples"):
            tuples = ctx.stream(self.pid)
        for op in self.operators:
            if not tuples:
                break
            ctx.charge(len(tuples))
            with profiler.measure(op.category):
                tuples = op.apply(ctx, tuples)
        return tuples

    @property
    def alternatives(self) -> tuple[PatternPlan, ...]:
        """The conjunctive plans whose bindings this plan gives: itself (see :class:`UnionPlan`)."""
        return (self,)

    def bound_nodes(self, ctx: DocumentContext) -> list[int]:
        """The last nodes of the qualifying tuples of a main plan: distinct, in document order."""
        if not self.operators and not self.recursive:
            # every tuple qualifies, and a path with one '//' at most has one tuple per node it
            # ends on (the steps before the '//' hang from the root, those after it from the
            # node): the nodes the run recorded, without building the tuples
            nodes = ctx.matches.last_nodes(self.pid)
            ctx.charge(len(nodes))
            return list(nodes)
        if self.by_sets(ctx):
            return self.field_nodes(ctx, self.pattern.last)
        return [t[-1] for t in self.tuples(ctx)]

    def field_nodes(self, ctx: DocumentContext, field: int) -> list[int]:
        """The nodes of ``field`` in qualifying tuples, distinct and in document order, computed by
        node sets (for :meth:`by_sets` plans): one set per step, once per document."""
        cache = ctx.caches.node_sets
        found = cache.get(self)
        if found is None:
            if ctx.profiler is None:
                found = self._node_sets(ctx)
            else:
                with ctx.profiler.measure("node sets"):
                    found = self._node_sets(ctx)
            cache[self] = found
        return found[field]

    def _node_sets(self, ctx: DocumentContext) -> list[list[int]]:
        steps = self._steps
        assert steps is not None
        return qualifying(ctx, steps, downward(ctx, steps, self._filters(ctx)))

    def _filters(self, ctx: DocumentContext) -> list[NodeFilter]:
        """Per field, what its node must pass: the operators' tests, for one document."""
        cache = ctx.caches.filters
        filters = cache.get(self)
        if filters is None:
            tests: list[list[Callable[[int], bool]]] = [[] for _ in self.pattern.nav]
            for op in self.operators:
                for field, test in op.node_tests(ctx):
                    tests[field].append(test)
            filters = cache[self] = [_all_of(t) for t in tests]
        return filters

    def prefix_pid(self, ctx: DocumentContext, field: int) -> int | None:
        """The NFA path id of the pattern's steps up to ``field``, remembered (hashing a path is
        not free). Stable while this plan lives: its prefix is the binding path of the plans that
        hold it."""
        prefixes = self.__dict__.setdefault("_prefixes", {})
        if field not in prefixes:
            prefixes[field] = ctx.matches.path_id(self.pattern.nav[: field + 1])
        return prefixes[field]

    def key_set(self, ctx: DocumentContext, field: int) -> set[int]:
        """The nodes of ``field`` in qualifying tuples: the build side of a hash semijoin."""
        cache, key = ctx.caches.key_sets, (self, field)
        keys = cache.get(key)
        if keys is None:
            if self.by_sets(ctx):
                keys = cache[key] = set(self.field_nodes(ctx, field))
            else:
                keys = cache[key] = {t[field] for t in self.tuples(ctx)}
        return keys

    def key_list(self, ctx: DocumentContext, field: int) -> list[int]:
        """The distinct nodes of ``field`` in stream order (ordered on it, by Claim 4)."""
        cache, key = ctx.caches.key_lists, (self, field)
        keys = cache.get(key)
        if keys is None:
            if self.by_sets(ctx):
                keys = cache[key] = self.field_nodes(ctx, field)
            else:
                keys = cache[key] = list(dict.fromkeys(t[field] for t in self.tuples(ctx)))
        return keys

    def groups(self, ctx: DocumentContext, field: int, dedupe: bool = True) -> dict[int, list[int]]:
        """Shared GroupBy: last-field nodes per node of ``field``, distinct and in document order."""
        cache, key = ctx.caches.groups, (self, field)
        groups = cache.get(key)
        if groups is None:
            groups = cache[key] = _group_by(self.tuples(ctx), field, dedupe)
        return groups

    def group(self, ctx: DocumentContext, field: int, anchor: int, dedupe: bool = True) -> list[int]:
        """The GroupBy's group of one node of ``field``: what a return slot needs for one binding.

        Where the pattern allows (see :func:`_group_of_anchor`), only the path's nodes in the
        anchor's subtree are looked at, so a document with many candidate anchors and few bound
        ones pays for the bound ones alone; otherwise the group comes from the shared GroupBy.
        """
        shape = self._suffix_shape(ctx, field)
        if shape is None:
            if self.by_sets(ctx):
                return self._group_by_sets(ctx, field, anchor)
            return self.groups(ctx, field, dedupe).get(anchor, [])
        cache, key = ctx.caches.anchor_groups, (self, field, anchor)
        members = cache.get(key)
        if members is None:
            members = cache[key] = _group_of_anchor(ctx, self, field, anchor, shape)
            ctx.charge(len(members))
        return members

    def _group_by_sets(self, ctx: DocumentContext, field: int, anchor: int) -> list[int]:
        """A group by node sets: the steps after ``field`` followed from the anchor, when the steps
        up to it qualify (for a return path: the anchor is a binding). Sets hold no duplicates, so
        DupElim is moot."""
        cache, key = ctx.caches.anchor_groups, (self, field, anchor)
        members = cache.get(key)
        if members is None:
            steps = self._steps
            assert steps is not None
            start, filters = field + 1, self._filters(ctx)
            if _holds(self._prefix_nodes(ctx, field), anchor):
                members = forward(ctx, anchor, steps[start:], filters[start:])
            else:
                members = []
            cache[key] = members
        return members

    def _prefix_nodes(self, ctx: DocumentContext, field: int) -> list[int]:
        """The nodes with a qualifying prefix up to ``field`` (for a return path: the nodes its
        binding path accepts), once per document."""
        cache, key = ctx.caches.prefix_nodes, (self, field)
        found = cache.get(key)
        if found is None:
            steps = self._steps
            assert steps is not None
            found = cache[key] = downward(ctx, steps[: field + 1], self._filters(ctx)[: field + 1])[-1]
        return found

    def _suffix_shape(self, ctx: DocumentContext, field: int) -> _SuffixShape | None:
        """How the steps after ``field`` hang from it, when :func:`_group_of_anchor` applies.
        Remembered per field: it depends on the pattern and on :meth:`prefix_pid`, both stable."""
        shapes = self.__dict__.setdefault("_suffix_shapes", {})
        if field in shapes:
            return shapes[field]
        shape = None if self.operators else _suffix_shape(self.pattern, field)
        if shape is not None and shape.descendant >= 0 and self.prefix_pid(ctx, field) is None:
            shape = None
        shapes[field] = shape
        return shape

    def describe(self) -> list[str]:
        lines = [f"Stream(path {self.pid}: {format_pattern(self.pattern)})"]
        if self.recursive:
            lines.append(
                "  or NodeSets, where a document gives the path many tuples per node (two '//' or more):"
                " one node set per step, the operators below testing their field's nodes"
            )
        lines += [op.describe() for op in self.operators]
        return lines + [f"  ({note})" for note in self.notes]


class _SuffixShape:
    """The steps of a pattern after a field: the position of its one ``//`` (-1: none) and the
    child steps between the field and that ``//``."""

    __slots__ = ("descendant", "head", "last")

    def __init__(self, last: int, descendant: int, head: list[str]) -> None:
        self.last = last
        self.descendant = descendant
        self.head = head


def _suffix_shape(pattern: PathPattern, field: int) -> _SuffixShape | None:
    nav = pattern.nav
    last = len(nav) - 1
    descendant = [j for j in range(field + 1, last + 1) if nav[j].axis is Axis.DESCENDANT]
    if len(descendant) > 1:
        return None
    if not descendant:
        return _SuffixShape(last, -1, [])
    j = descendant[0]
    return _SuffixShape(last, j, [step.tag for step in nav[field + 1 : j]])


def _group_of_anchor(
    ctx: DocumentContext, plan: PatternPlan, field: int, anchor: int, shape: _SuffixShape
) -> list[int]:
    """The GroupBy's group of one anchor, without path-tuples: at most one ``//`` follows ``field``.

    The child steps after the ``//`` (or after ``field``, without one) fix, for each node the path
    accepts, the node they hang from; the anchor is in ``field`` for that node exactly when it is,
    or (with a ``//``) when it is a strict ancestor of it whose chain matches the child steps before
    the ``//`` and that the binding path accepts. So the group is exact and, taken in document
    order, needs no DupElim.

    Element ids are in document order, so the subtree is an id range and its share of the path's
    (sorted) nodes two bisections away. A node belongs to the group when the anchor is where its
    chain of steps hangs: for child steps only, exactly ``last - field`` levels up; with a ``//``
    at step ``j``, the anchor must be an ancestor of the node ``j`` matched (``x``), at least
    ``len(head) + 1`` levels above it, with ``head``'s tags on the way down, and accepted by the
    binding path.
    """
    matches = ctx.matches
    nodes = matches.last_nodes(plan.pid)
    lo = bisect_right(nodes, anchor)
    hi = bisect_right(nodes, matches.subtree_ends()[anchor], lo)
    if lo == hi:
        return []
    parents = matches.parents
    if shape.descendant < 0:
        up = shape.last - field
        return [nid for nid in nodes[lo:hi] if _ancestor(parents, nid, up) == anchor]
    prefix = plan.prefix_pid(ctx, field)
    assert prefix is not None  # PatternPlan._suffix_shape keeps no '//' shape without the prefix's path
    accepted = matches.last_nodes(prefix)
    at = bisect_left(accepted, anchor)
    if at == len(accepted) or accepted[at] != anchor:
        return []
    up = shape.last - shape.descendant
    head = shape.head
    if not head:
        # the anchor is an ancestor of every node in its subtree, and of x exactly when x is
        # inside the subtree too: ancestors of a node are ordered by id
        return [nid for nid in nodes[lo:hi] if _ancestor(parents, nid, up) > anchor]
    tags = matches.tags
    members = []
    for nid in nodes[lo:hi]:
        between = []  # the elements strictly between the anchor and x, bottom up
        node = parents[_ancestor(parents, nid, up)]
        while node > anchor:
            between.append(node)
            node = parents[node]
        ctx.charge(len(between) + 1)
        if node != anchor or len(between) < len(head):
            continue
        below = between[::-1]
        if all(tag_matches(tag, tags[below[i]]) for i, tag in enumerate(head)):
            members.append(nid)
    return members


def _ancestor(parents: Sequence[int], nid: int, up: int) -> int:
    for _ in range(up):
        nid = parents[nid]
    return nid


def _group_by(tuples: list[PathTuple], field: int, dedupe: bool) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for t in tuples:
        members = groups.get(t[field])
        if members is None:
            groups[t[field]] = [t[-1]]
        elif not dedupe or members[-1] != t[-1]:  # scan DupElim: the stream is ordered on its last field
            members.append(t[-1])
    return groups


def _all_of(tests: list[Callable[[int], bool]]) -> NodeFilter:
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda nid: all(test(nid) for test in tests)


def _holds(nodes: list[int], nid: int) -> bool:
    """Whether the sorted ``nodes`` hold ``nid``."""
    at = bisect_left(nodes, nid)
    return at < len(nodes) and nodes[at] == nid


class UnionPlan:
    """A subscription's main plan in disjunctive normal form (:mod:`feedrouter.plan.dnf`): the
    bindings of its conjunctive alternatives, each node once, in document order.

    Each alternative is an ordinary interned main plan, so it shares its NFA path, operators and
    per-document bindings with every subscription (or alternative) that has the same pattern.
    """

    def __init__(self, alternatives: tuple[PatternPlan, ...]) -> None:
        self.alternatives = alternatives
        self.pattern = tuple(p.pattern for p in alternatives)  # what the bindings depend on

    def bound_nodes(self, ctx: DocumentContext) -> list[int]:
        found: set[int] = set()
        bindings = ctx.bindings
        for plan in self.alternatives:
            bound = bindings.get(plan)
            if bound is None:
                bound = bindings[plan] = plan.bound_nodes(ctx)
            found.update(bound)
        return sorted(found)  # node ids are document order

    def describe(self) -> list[str]:
        lines = [f"Union[DupElim, document order] of {len(self.alternatives)} alternatives (DNF):"]
        for k, plan in enumerate(self.alternatives, 1):
            lines.append(f"alternative {k}:")
            lines.extend(f"  {line}" for line in plan.describe())
        return lines
