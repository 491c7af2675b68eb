"""Selections pulled up over shared joins, grouped by signature (paper 000 §5).

Pushing each subscription's selection below its semijoin gives every constant a plan of its own:
``for $s in //story where $s/@id = 17`` and ``... = 18`` each scan the ``@id`` values and each join
with the ``//story`` stream. Pulled up, all semijoins with one **signature** (the binding path, the
join field and the predicate's site: path, field, attribute or text, value kind) become one shared
join, computed once per document: the binding tuples grouped by their join node, and each join
node's values at the site. Above it a shared selection finds, per constant, the join nodes whose
values satisfy it; its output for a constant is the group of binding tuples of those nodes, handed
to every plan that asks, without copying (the paper's per-constant tpLists, built lazily).

It applies where the main pattern's only test is one indexable comparison (``=``, ``<``, ``<=``,
``>``, ``>=`` against a literal), either on the binding path itself (``//story[@id = 17]``, where
the join is with itself) or in a single predicate path (``//story[head/id = 17]``). Other plans
keep their pushed-down Selection and SemiJoin operators.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from feedrouter.engine.runtime import PathTuple
from feedrouter.lang.ast import MATCH_FUNCTIONS, CompOp
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.index import Key, PidOf, ProbeSite, probe_for, site_keys
from feedrouter.plan.nodesets import Step, above, downward, plain_field_nodes
from feedrouter.plan.patterns import PathPattern

_COMPARE: dict[CompOp, Callable[[Key, Key], bool]] = {
    CompOp.EQ: operator.eq,
    CompOp.LT: operator.lt,
    CompOp.LE: operator.le,
    CompOp.GT: operator.gt,
    CompOp.GE: operator.ge,
}


@dataclass(frozen=True)
class JoinSignature:
    """What the semijoins sharing one join have in common."""

    left_pid: int  # the binding path's stream
    field: int  # the join field, numbered alike in the binding and the predicate path
    site: ProbeSite  # where the predicate's values are read
    own: bool  # the test is on the join node itself (no predicate path; a predicate path may have
    # the binding path's very navigation, as in //a[.//b = 1]//b, so the path ids do not tell)


@dataclass(frozen=True)
class SharedSelectionPlan:
    """How a main pattern uses a shared join: its signature, operator and constant."""

    signature: JoinSignature
    op: CompOp
    key: Key


def shared_selection_plan(pattern: PathPattern, pid_of: PidOf) -> SharedSelectionPlan | None:
    """The shared join a main pattern can use, or None when its tests do not have that shape.

    ``pid_of`` maps a navigation path to its NFA path id (None when it is not in the NFA): the
    caller puts the predicate path in the NFA first.
    """
    if pattern.branches:
        if len(pattern.branches) != 1 or pattern.tested_fields or pattern.branches[0].negated:
            return None
        join, holder = pattern.branches[0].field, pattern.branches[0].pattern
        if holder.branches:
            return None
    else:
        join, holder = -1, pattern
    tests = [(i, test) for i, tests in enumerate(holder.tests) for test in tests]
    if len(tests) != 1:
        return None
    at, test = tests[0]
    probe = probe_for(test, pid_of(holder.nav), at, at == holder.last)
    left = pid_of(pattern.nav)
    if probe is None or left is None or (join >= 0 and at <= join):
        return None
    if probe.site.call is not None and probe.site.call.name in MATCH_FUNCTIONS:
        return None  # keywords are not equalities: the selection index matches them instead
    signature = JoinSignature(left, at if join < 0 else join, probe.site, own=join < 0)
    return SharedSelectionPlan(signature, probe.op, probe.key)


class SharedSelection:
    """A main plan's first operator: its constant's output of the shared join of its signature."""

    category = "Selection"

    def __init__(self, shared: SharedSelectionPlan) -> None:
        self.signature, self.op, self.key = shared.signature, shared.op, shared.key

    def apply(self, ctx: DocumentContext, tuples: list[PathTuple]) -> list[PathTuple]:
        joins = ctx.caches.shared_joins
        joined = joins.get(self.signature)
        if joined is None:
            joined = joins[self.signature] = SharedJoin(ctx, self.signature, tuples)
        return joined.output(self.op, self.key)

    def describe(self) -> str:
        site = self.signature.site
        if site.call is not None:
            subject = f"{site.call.name}()"
        else:
            subject = {"@cmp": f"@{site.attribute}", "text()cmp": "text()", ".": "."}[site.kind.value]
        on = "itself" if self.signature.own else f"path {site.pid}"
        return (
            f"SharedSelection[{'hash' if self.op is CompOp.EQ else 'sorted'}]"
            f"(${site.field + 1} {subject} {self.op.value} {self.key!r}) over SharedJoin"
            f"(${self.signature.field + 1} with {on})"
        )


class SharedJoin:
    """One document's join for one signature, with the outputs of the constants asked for so far."""

    __slots__ = ("_by_key", "_left", "_outputs", "_recursive", "_stream", "_values", "field")

    def __init__(self, ctx: DocumentContext, signature: JoinSignature, left: list[PathTuple]) -> None:
        self.field = f = signature.field
        self._stream = left
        self._left: dict[int, list[PathTuple]] = {}  # join node -> its binding tuples, stream order
        for t in left:
            group = self._left.get(t[f])
            if group is None:
                self._left[t[f]] = [t]
            else:
                group.append(t)
        ctx.charge(len(left))
        self._recursive: _RecursiveSite | None = None
        site_pid = signature.site.pid
        if not signature.own and ctx.small_stream(site_pid) is None:
            # the predicate path has many tuples per node here: values per site node instead
            self._recursive = _RecursiveSite(ctx, signature, ctx.matches.steps(site_pid))
            self._values = self._recursive.values
        else:
            self._values = _join_values(ctx, signature, self._left)
        self._by_key: dict[Key, list[int]] | None = None
        self._outputs: dict[tuple[CompOp, Key], list[PathTuple]] = {}

    def output(self, op: CompOp, key: Key) -> list[PathTuple]:
        found = self._outputs.get((op, key))
        if found is None:
            found = self._outputs[op, key] = self._tuples_of(self._satisfying(op, key))
        return found

    def _satisfying(self, op: CompOp, key: Key) -> list[int]:
        """The join nodes whose values satisfy ``op key`` (with a recursive predicate path, the
        site nodes that do, then the join nodes they hang from)."""
        nodes = self._satisfying_values(op, key)
        if self._recursive is None or not nodes:
            return nodes
        left = self._left
        return [nid for nid in self._recursive.join_nodes(nodes) if nid in left]

    def _satisfying_values(self, op: CompOp, key: Key) -> list[int]:
        if op is CompOp.EQ:
            if self._by_key is None:
                self._by_key = {}
                for node, keys in self._values.items():
                    for k in keys:
                        self._by_key.setdefault(k, []).append(node)
            return self._by_key.get(key, [])
        compare = _COMPARE[op]
        return [node for node, keys in self._values.items() if any(compare(k, key) for k in keys)]

    def _tuples_of(self, nodes: list[int]) -> list[PathTuple]:
        if not nodes:
            return []
        if len(nodes) == 1:
            return self._left[nodes[0]]  # shared, never copied: readers do not change it
        chosen, f = set(nodes), self.field
        return [t for t in self._stream if t[f] in chosen]  # stream order, as DupElim[scan] needs


class _RecursiveSite:
    """A recursive predicate path's site: the values of its site nodes, and the way back from some
    of them to the join nodes, by node sets (:mod:`feedrouter.plan.nodesets`), per constant."""

    __slots__ = ("_ctx", "_steps", "at", "join", "values")

    def __init__(self, ctx: DocumentContext, signature: JoinSignature, steps: tuple[Step, ...]) -> None:
        site = signature.site
        self._ctx, self._steps = ctx, steps
        self.join, self.at = signature.field, site.field
        nodes = plain_field_nodes(ctx, steps, site.field)
        ctx.charge(len(nodes))
        self.values: dict[int, set[Key]] = {}  # site node -> its keys, in document order
        for nid in nodes:
            keys = set(site_keys(ctx, nid, site))
            if keys:
                self.values[nid] = keys

    def join_nodes(self, sites: list[int]) -> list[int]:
        """The join nodes from which the predicate path reaches one of ``sites`` (sorted, each on a
        whole tuple of the path): back through each step's prefix set."""
        ctx, steps = self._ctx, self._steps
        down = downward(ctx, steps, [None] * len(steps))
        current = sites
        for k in range(self.at - 1, self.join - 1, -1):
            current = above(ctx, down[k], steps[k + 1][0], current)
        return current


def _join_values(
    ctx: DocumentContext, signature: JoinSignature, left: dict[int, list[PathTuple]]
) -> dict[int, set[Key]]:
    """Join node -> the keys found at the site for it (join nodes without binding tuples skipped)."""
    site, f = signature.site, signature.field
    values: dict[int, set[Key]] = {}
    if signature.own:
        for node in left:
            keys = set(site_keys(ctx, node, site))
            if keys:
                values[node] = keys
        return values
    for t in ctx.stream(site.pid):
        node = t[f]
        if node in left:
            values.setdefault(node, set()).update(site_keys(ctx, t[site.field], site))
    return values
