"""Paths evaluated by node sets per step, in time linear in (elements x steps): no path-tuples.

A path with k ``//`` steps has O(depth^k) path-tuples per element on a recursive document (150
nested ``<a>`` and ``//a[.//a//a//a = "z"]`` once cost 22 s and 1.7 GB). But every question a plan
asks of such a path is existential and only relates neighbouring steps: which nodes stand in a
field of *some* qualifying tuple (a semijoin's keys, a subscription's bindings), which last nodes
hang from one anchor (a return group), whether a branch holds at a node (a Where-Filter). Each is
answered with one sorted list of element ids per step, as XPath engines do:

* ``down[k]``: the nodes with a qualifying prefix ending at step ``k`` (computed from the root);
* ``qualifying[k]``: the nodes of ``down[k]`` from which a qualifying suffix continues, i.e. the
  nodes of field ``k`` in some qualifying path-tuple (computed back from the last step).

The constraints between fields only link neighbours, so a prefix and a suffix meeting at one node
always make a whole tuple, which is why these sets are exact. Element ids are in document order and
a subtree is the id range ``nid + 1 .. subtree_ends[nid]``, so "the descendants of S named t" are
slices of the sorted ids named t, and "has a descendant in S" is one bisection.

A step's *filter* (``(node) -> bool``, or None) stands for everything a plan checks on that field's
node: local tests, semijoin key sets, Where-Filter branches. Every set built is charged to the
document's work budget (:meth:`DocumentContext.charge`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from feedrouter.engine.nfa import NavPath, tag_matches
from feedrouter.lang.ast import Axis
from feedrouter.plan.context import DocumentContext

#: One step: ``(child, tag)``, ``child`` False for a ``//`` step, ``tag`` a Clark name or ``*``.
Step = tuple[bool, str]
NodeFilter = Callable[[int], bool] | None


def steps_of(nav: NavPath) -> tuple[Step, ...]:
    """A navigation path as ``(child, tag)`` steps."""
    return tuple((step.axis is Axis.CHILD, step.tag) for step in nav)


def is_recursive(steps: Sequence[Step]) -> bool:
    """True when the steps may bind more than one path-tuple per last node (two ``//`` or more),
    so that only node sets bound their cost on recursive documents (without them: Claim 1)."""
    return sum(1 for child, _ in steps if not child) >= 2


# -- set operations -------------------------------------------------------------------------------


def below_root(ctx: DocumentContext, child: bool, tag: str) -> list[int]:
    """The nodes a first step reaches from the document node: the root element, or any element."""
    if not ctx.nodes:
        return []
    if child:
        return [0] if tag_matches(tag, ctx.matches.tags[0]) else []
    return ctx.tagged(tag)


def below(ctx: DocumentContext, sources: list[int], child: bool, tag: str) -> list[int]:
    """The nodes named ``tag`` that are children (or proper descendants) of some of ``sources``.

    ``sources`` are sorted; so is the result. Descendants: a source inside the previous source's
    subtree adds nothing to the range already taken, so each named node is looked at once.
    """
    if child:
        return _children(ctx, sources, tag)
    names = ctx.tagged(tag)
    ends = ctx.matches.subtree_ends()
    out: list[int] = []
    stop = -1
    for source in sources:
        if source <= stop:
            continue
        stop = ends[source]
        lo = bisect_right(names, source)
        out.extend(names[lo : bisect_right(names, stop, lo)])
    ctx.charge(len(sources) + len(out))
    return out


def _children(ctx: DocumentContext, sources: list[int], tag: str) -> list[int]:
    """The children named ``tag`` of the sources, walked sibling to sibling: a child's next
    sibling is the element after its subtree."""
    ends, tags = ctx.matches.subtree_ends(), ctx.matches.tags
    out: list[int] = []
    stop, nested = -1, False
    for source in sources:
        nested = nested or source <= stop  # its children come before the outer source's next ones
        stop = max(stop, ends[source])
        node, last = source + 1, ends[source]
        while node <= last:
            if tag_matches(tag, tags[node]):
                out.append(node)
            node = ends[node] + 1
    ctx.charge(len(sources) + len(out))
    return sorted(out) if nested else out


def above(ctx: DocumentContext, candidates: list[int], child: bool, targets: list[int]) -> list[int]:
    """The candidates that have a child (or a proper descendant) among ``targets`` (both sorted)."""
    ctx.charge(len(candidates) + len(targets))
    if not targets:
        return []
    if child:
        parents = ctx.matches.parents
        holding = {parents[nid] for nid in targets}
        return [nid for nid in candidates if nid in holding]
    ends = ctx.matches.subtree_ends()
    last = len(targets)
    out = []
    for nid in candidates:
        at = bisect_right(targets, nid)
        if at < last and targets[at] <= ends[nid]:
            out.append(nid)
    return out


def _kept(ctx: DocumentContext, nodes: list[int], keep: NodeFilter) -> list[int]:
    if keep is None or not nodes:
        return nodes
    ctx.charge(len(nodes))
    return [nid for nid in nodes if keep(nid)]


# -- whole paths ----------------------------------------------------------------------------------


def downward(ctx: DocumentContext, steps: Sequence[Step], filters: Sequence[NodeFilter]) -> list[list[int]]:
    """``down[k]`` for every step: the nodes with a qualifying prefix (steps 0..k from the root).

    Prefixes without filters are shared by every plan in the document (the branch paths of one
    binding path all start with it), keyed by their steps.
    """
    down: list[list[int]] = []
    plain = True  # no filter so far: the prefix's set is the document's shared one
    for k, (child, tag) in enumerate(steps):
        keep = filters[k]
        if plain and keep is None:
            found = _plain(ctx, steps, k)
        else:
            plain = False
            found = below_root(ctx, child, tag) if k == 0 else below(ctx, down[-1], child, tag)
            found = _kept(ctx, found, keep)
        down.append(found)
        if not found:
            return down + [[] for _ in range(len(steps) - k - 1)]
    return down


def _plain(ctx: DocumentContext, steps: Sequence[Step], k: int) -> list[int]:
    """``down[k]`` of the unfiltered steps ``0..k``, memoized per document."""
    cache, key = ctx.caches.plain_down, tuple(steps[: k + 1])
    found = cache.get(key)
    if found is None:
        child, tag = steps[k]
        found = below_root(ctx, child, tag) if k == 0 else below(ctx, _plain(ctx, steps, k - 1), child, tag)
        cache[key] = found
    return found


def qualifying(ctx: DocumentContext, steps: Sequence[Step], down: list[list[int]]) -> list[list[int]]:
    """``qualifying[k]`` for every step, from ``down``: the nodes of field ``k`` in some tuple."""
    last = len(steps) - 1
    found: list[list[int]] = [[] for _ in steps]
    found[last] = down[last]
    for k in range(last - 1, -1, -1):
        found[k] = above(ctx, down[k], steps[k + 1][0], found[k + 1])
    return found


def plain_field_nodes(ctx: DocumentContext, steps: Sequence[Step], field: int) -> list[int]:
    """The nodes of one field over an unfiltered path's tuples (a site of the selection index)."""
    cache, key = ctx.caches.plain_fields, (tuple(steps), field)
    found = cache.get(key)
    if found is None:
        found = cache[key] = qualifying(ctx, steps, downward(ctx, steps, [None] * len(steps)))[field]
    return found


def forward(
    ctx: DocumentContext, start: int, steps: Sequence[Step], filters: Sequence[NodeFilter]
) -> list[int]:
    """The nodes ``steps`` reach from node ``start``: distinct and in document order."""
    current = [start]
    for (child, tag), keep in zip(steps, filters, strict=True):
        current = _kept(ctx, below(ctx, current, child, tag), keep)
        if not current:
            break
    return current


def backward(ctx: DocumentContext, steps: Sequence[Step], filters: Sequence[NodeFilter]) -> list[int]:
    """The nodes of the first step from which the rest of ``steps`` continue to the last one.

    Computed bottom-up over the whole document, once per branch and document: then whether the
    branch holds at a node is one look-up (:class:`~feedrouter.plan.search.BranchHolders`).
    """
    last = len(steps) - 1
    current = _kept(ctx, ctx.tagged(steps[last][1]), filters[last])
    for k in range(last - 1, -1, -1):
        if not current:
            return []
        current = _kept(ctx, above(ctx, ctx.tagged(steps[k][1]), steps[k + 1][0], current), filters[k])
    return current
