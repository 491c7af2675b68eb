"""Tree search for what is not in the NFA: PathSharing-F's branches, -F's and -FW's return paths.

A relative path is searched from a context node by walking the tree below it (lxml's iterators),
each branch's outcome remembered per node. With two ``//`` steps or more, a search binds each ``//``
to every descendant in turn: depth^k ways on a recursive document. So such a search may look at no
more than :data:`SEARCH_STEPS_PER_NODE` elements per element of the context's subtree; past that,
the path is evaluated by node sets for the rest of the document (:mod:`feedrouter.plan.nodesets`): a
branch by the set of nodes it holds at, computed once bottom-up; a return path by the steps' sets
forward from the bound node. Either way the cost is linear in the subtree or the document.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache

from feedrouter.lang.ast import Axis
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.nodesets import NodeFilter, Step, backward, forward, is_recursive, steps_of
from feedrouter.plan.patterns import LocalTest, PathPattern

#: A search along two '//' steps or more is given up, for node sets, once it has looked at more
#: elements than this many per element of the context's subtree, plus the slack.
SEARCH_STEPS_PER_NODE = 8
SEARCH_SLACK = 64


class _GivenUp(Exception):
    """A bounded search looked at more elements than it may."""


def search(ctx: DocumentContext, nid: int, pattern: PathPattern, stop: int | None = None) -> Iterator[int]:
    """Nodes reached from node ``nid`` (bound to field ``base - 1``) along the rest of ``pattern``;
    :class:`_GivenUp` once the document's work count passes ``stop``."""
    return _search_from(ctx, nid, pattern, pattern.base, stop)


def _search_from(
    ctx: DocumentContext, nid: int, pattern: PathPattern, k: int, stop: int | None
) -> Iterator[int]:
    step = pattern.nav[k]
    tests: tuple[LocalTest, ...] = pattern.tests[k]
    branches = [b for b in pattern.branches if b.field == k]
    last = k == len(pattern.nav) - 1
    for cid in ctx.children(nid, step.tag, step.axis is Axis.DESCENDANT):
        if stop is not None and ctx.work > stop:
            raise _GivenUp
        if tests and not ctx.passes(cid, tests):
            continue
        if branches and not all(branch_holds(ctx, cid, b.pattern) != b.negated for b in branches):
            continue
        if last:
            yield cid
        else:
            yield from _search_from(ctx, cid, pattern, k + 1, stop)


def branch_holds(ctx: DocumentContext, nid: int, branch: PathPattern) -> bool:
    """Whether ``branch`` has a qualifying match from node ``nid`` (its context node)."""
    cache, key = ctx.caches.branch_held, (branch, nid)
    held = cache.get(key)
    if held is None:
        held = cache[key] = _branch_holds(ctx, nid, branch)
    return held


def _branch_holds(ctx: DocumentContext, nid: int, branch: PathPattern) -> bool:
    holders = ctx.caches.branch_holders.get(branch)
    if holders is None:
        try:
            held = next(search(ctx, nid, branch, _stop(ctx, nid, branch)), None) is not None
        except _GivenUp:
            holders = ctx.caches.branch_holders[branch] = BranchHolders(ctx, branch)
        else:
            _check_budget(ctx)
            return held
    return holders.holds(nid)


def search_all(ctx: DocumentContext, nid: int, pattern: PathPattern) -> list[int]:
    """Every node a return path reaches from ``nid``: distinct, in document order."""
    if pattern not in ctx.caches.searched_by_sets:
        try:
            found = sorted(set(search(ctx, nid, pattern, _stop(ctx, nid, pattern))))
        except _GivenUp:
            ctx.caches.searched_by_sets.add(pattern)  # and for the other bindings of this document
        else:
            _check_budget(ctx)
            ctx.charge(len(found))
            return found
    return forward(ctx, nid, _relative(pattern).steps, search_filters(ctx, pattern))


def _stop(ctx: DocumentContext, nid: int, pattern: PathPattern) -> int | None:
    """Where a search from ``nid`` gives up: None (never) with one ``//`` or none, whose search
    costs at most the subtree."""
    if not _relative(pattern).recursive:
        return None
    subtree = ctx.matches.subtree_ends()[nid] - nid + 1
    return ctx.work + SEARCH_STEPS_PER_NODE * subtree + SEARCH_SLACK


def _check_budget(ctx: DocumentContext) -> None:
    """A search counts its steps without checking the budget (see :meth:`DocumentContext.children`)."""
    if ctx.work > ctx.max_work:
        raise ctx.over_budget()


class _Relative:
    """The steps of a pattern after its base, and whether node sets must evaluate them."""

    __slots__ = ("recursive", "steps")

    def __init__(self, steps: tuple[Step, ...]) -> None:
        self.steps = steps
        self.recursive = is_recursive(steps)


@lru_cache(maxsize=65536)
def _relative(pattern: PathPattern) -> _Relative:
    return _Relative(steps_of(pattern.nav[pattern.base :]))


def search_filters(ctx: DocumentContext, pattern: PathPattern) -> list[NodeFilter]:
    """Per step after the base, what its node must pass: local tests and nested branches."""
    filters: list[NodeFilter] = []
    for k in range(pattern.base, len(pattern.nav)):
        tests = pattern.tests[k]
        branches = tuple((b.pattern, b.negated) for b in pattern.branches if b.field == k)
        filters.append(_node_filter(ctx, tests, branches) if tests or branches else None)
    return filters


def _node_filter(
    ctx: DocumentContext, tests: tuple[LocalTest, ...], branches: tuple[tuple[PathPattern, bool], ...]
) -> NodeFilter:
    def passes(nid: int) -> bool:
        return (not tests or ctx.passes(nid, tests)) and all(
            branch_holds(ctx, nid, b) != negated for b, negated in branches
        )

    return passes


class BranchHolders:
    """The nodes a recursive branch holds at, for one document: the parents (``/`` first step) or
    the ancestors (``//``) of the nodes its first step can bind with the rest qualifying."""

    __slots__ = ("_child", "_ends", "_parents", "_targets")

    def __init__(self, ctx: DocumentContext, branch: PathPattern) -> None:
        relative = _relative(branch)
        self._targets = backward(ctx, relative.steps, search_filters(ctx, branch))
        self._child = relative.steps[0][0]
        parents = ctx.matches.parents
        self._parents = {parents[nid] for nid in self._targets} if self._child else set()
        self._ends = ctx.matches.subtree_ends()

    def holds(self, nid: int) -> bool:
        if self._child:
            return nid in self._parents
        at = bisect_right(self._targets, nid)
        return at < len(self._targets) and self._targets[at] <= self._ends[nid]


def _holders(ctx: DocumentContext, branch: PathPattern) -> BranchHolders:
    cache = ctx.caches.branch_holders
    holders = cache.get(branch)
    if holders is None:
        holders = cache[branch] = BranchHolders(ctx, branch)
    return holders
