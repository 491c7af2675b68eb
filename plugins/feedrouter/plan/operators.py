"""Relational post-processing operators over path-tuple streams (paper 000 §3).

A :class:`PatternPlan` turns the engine's stream for one navigation path into the tuples that satisfy
the pattern's tests and branches: Selection first, then one join per branch (a semijoin against the
branch's own plan when its path is in the NFA, a Where-Filter tree search when it is not), then
DupElim where duplicates can arise. Plans are interned by the planner, and the results that several
subscriptions consume (branch key sets, return groups) are memoized per document in the context, so
identical sub-plans run once per document.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from feedrouter.engine.nfa import WILDCARD
from feedrouter.engine.runtime import PathTuple
from feedrouter.lang.ast import Axis
from feedrouter.plan.context import DocumentContext, checker
from feedrouter.plan.patterns import LocalTest, PathPattern, format_pattern


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

    def describe(self) -> str:
        return (
            "Selection(" + "; ".join(f"${i + 1}: " + ", ".join(map(str, ts)) for i, ts in self.fields) + ")"
        )


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

    def describe(self) -> str:
        return f"DupElim[scan](${self.field + 1})"


class DupElimHash:
    """Keeps the first tuple for each node in ``field`` when the stream is not ordered on it."""

    category = "DupElim"

    def __init__(self, field: int) -> None:
        self.field = field

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        seen: set[int] = set()
        out, f = [], self.field
        for t in tuples:
            if t[f] not in seen:
                seen.add(t[f])
                out.append(t)
        return out

    def describe(self) -> str:
        return f"DupElim[hash](${self.field + 1})"


class _SemiJoin:
    """Left tuples whose node in ``field`` has a qualifying match of the right plan."""

    category = "SemiJoin"
    method = ""

    def __init__(self, field: int, right: PatternPlan) -> None:
        self.field, self.right = field, right

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


class WhereFilter:
    """Checks a branch by searching the document tree below the node of ``field`` (PathSharing-F)."""

    category = "Where-Filter"

    def __init__(self, field: int, branch: PathPattern) -> None:
        self.field, self.branch = field, branch

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        f, branch = self.field, self.branch
        return [t for t in tuples if branch_holds(ctx, t[f], branch)]

    def describe(self) -> str:
        return f"WhereFilter[tree](${self.field + 1}, {format_pattern(self.branch)})"


class PatternPlan:
    """The operators that turn the stream of one path id into the tuples satisfying a pattern."""

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

    def tuples(self, ctx: DocumentContext) -> list[PathTuple]:
        if ctx.profiler is not None:
            return self._profiled_tuples(ctx, ctx.profiler)
        tuples = ctx.stream(self.pid)
        for op in self.operators:
            if not tuples:
                break
            tuples = op.apply(ctx, tuples)
        return tuples

    def _profiled_tuples(self, ctx: DocumentContext, profiler) -> list[PathTuple]:  # type: ignore[no-untyped-def]
        with profiler.measure("path-tuples"):
            tuples = ctx.stream(self.pid)
        for op in self.operators:
            if not tuples:
                break
            with profiler.measure(op.category):
                tuples = op.apply(ctx, tuples)
        return tuples

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
        key = (self, field, "set")
        keys = ctx.memo.get(key)
        if keys is None:
            keys = ctx.memo[key] = {t[field] for t in self.tuples(ctx)}
        return keys  # type: ignore[return-value]

    def key_list(self, ctx: DocumentContext, field: int) -> list[int]:
        """The distinct nodes of ``field`` in stream order (ordered on it, by Claim 4)."""
        key = (self, field, "list")
        keys = ctx.memo.get(key)
        if keys is None:
            keys = ctx.memo[key] = list(dict.fromkeys(t[field] for t in self.tuples(ctx)))
        return keys  # type: ignore[return-value]

    def groups(self, ctx: DocumentContext, field: int, dedupe: bool = True) -> dict[int, list[int]]:
        """Shared GroupBy: last-field nodes per node of ``field``, distinct and in document order."""
        key = (self, field, "groups")
        groups = ctx.memo.get(key)
        if groups is None:
            groups = ctx.memo[key] = _group_by(self.tuples(ctx), field, dedupe)
        return groups  # type: ignore[return-value]

    def group(self, ctx: DocumentContext, field: int, anchor: int, dedupe: bool = True) -> list[int]:
        """The GroupBy's group of one node of ``field``: what a return slot needs for one binding.

        Where the pattern allows (see :func:`_group_of_anchor`), only the path's nodes in the
        anchor's subtree are looked at, so a document with many candidate anchors and few bound
        ones pays for the bound ones alone; otherwise the group comes from the shared GroupBy.
        """
        shape = self._suffix_shape(ctx, field)
        if shape is None:
            return self.groups(ctx, field, dedupe).get(anchor, [])
        key = (self, field, anchor)
        members = ctx.memo.get(key)
        if members is None:
            members = ctx.memo[key] = _group_of_anchor(ctx, self, field, anchor, shape)
        return members  # type: ignore[return-value]

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
    accepted = matches.last_nodes(plan.prefix_pid(ctx, field))  # type: ignore[arg-type]
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
        if node != anchor or len(between) < len(head):
            continue
        below = between[::-1]
        if all(tag == WILDCARD or tags[below[i]] == tag for i, tag in enumerate(head)):
            members.append(nid)
    return members


def _ancestor(parents: list[int], nid: int, up: int) -> int:
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


# -- tree search (PathSharing-F and -FW use it for what is not in the NFA) --------------------------


def search(ctx: DocumentContext, nid: int, pattern: PathPattern) -> Iterator[int]:
    """Nodes reached from node ``nid`` (bound to field ``base - 1``) along the rest of ``pattern``."""
    return _search_from(ctx, nid, pattern, pattern.base)


def _search_from(ctx: DocumentContext, nid: int, pattern: PathPattern, k: int) -> Iterator[int]:
    step = pattern.nav[k]
    tests: tuple[LocalTest, ...] = pattern.tests[k]
    branches = [b.pattern for b in pattern.branches if b.field == k]
    last = k == len(pattern.nav) - 1
    for cid in ctx.children(nid, step.tag, step.axis is Axis.DESCENDANT):
        if tests and not ctx.passes(cid, tests):
            continue
        if branches and not all(branch_holds(ctx, cid, b) for b in branches):
            continue
        if last:
            yield cid
        else:
            yield from _search_from(ctx, cid, pattern, k + 1)


def branch_holds(ctx: DocumentContext, nid: int, branch: PathPattern) -> bool:
    key = (branch, nid)
    held = ctx.memo.get(key)
    if held is None:
        held = ctx.memo[key] = next(search(ctx, nid, branch), None) is not None
    return held  # type: ignore[return-value]


def search_all(ctx: DocumentContext, nid: int, pattern: PathPattern) -> list[int]:
    """Every node a return path reaches from ``nid``: distinct, in document order."""
    return sorted(set(search(ctx, nid, pattern)))
