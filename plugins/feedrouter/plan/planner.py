"""Build each subscription's post-processing plan over the shared NFA (paper 000 §3, §4).

The strategy says which paths go into the NFA: PathSharing-F puts only the binding (or filter) path
there and checks branches and return paths by searching the tree; -FW adds the predicate paths
(semijoins); -FWR adds the return paths too (OuterJoin-Select over shared GroupBys). Pattern plans
are interned and reference counted, so identical patterns share one plan, one NFA path and one
per-document result, and removing a subscription releases exactly what it held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from feedrouter.engine.document import iter_text_nodes
from feedrouter.engine.nfa import Nfa
from feedrouter.errors import CompileError
from feedrouter.lang import ast
from feedrouter.output.factory import ElementTemplate, Group, Item, Slot, Template, compile_constructor
from feedrouter.output.factory import wrapper_template as make_wrapper
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.operators import (
    DupElimScan,
    PatternPlan,
    Selection,
    SemiJoinHash,
    SemiJoinMerge,
    WhereFilter,
    search_all,
)
from feedrouter.plan.patterns import Branch, PathPattern, absolute_pattern, format_pattern, relative_pattern
from feedrouter.plan.rules import Optimize
from feedrouter.plan.rules.claims import no_duplicates, no_duplicates_on, ordered_on
from feedrouter.plan.rules.resolve_wildcards import resolve_wildcards
from feedrouter.plan.rules.rewrite_descendants import rewrite_descendants
from feedrouter.schema import DtdGraph

#: Navigation rewrites run in this order when the DTD is used (wildcards first: they name the
#: context the '//' rewrite looks at).
NAV_RULES = (resolve_wildcards, rewrite_descendants)


class Strategy(Enum):
    F = "F"
    FW = "FW"
    FWR = "FWR"

    @classmethod
    def parse(cls, name: str) -> Strategy:
        if name == "auto":
            return cls.FWR  # with the optimizations, the paper's best performer (§6)
        try:
            return cls(name)
        except ValueError:
            raise CompileError(
                f"unknown strategy {name!r}; use 'auto', 'F', 'FW' or 'FWR'", code="FR302"
            ) from None

    @property
    def branches_in_nfa(self) -> bool:
        return self is not Strategy.F

    @property
    def returns_in_nfa(self) -> bool:
        return self is Strategy.FWR


@dataclass
class ReturnItem:
    """One return slot: the bound node itself, or a path from it (through the NFA or a tree search)."""

    pattern: PathPattern | None
    text: bool = False
    plan: PatternPlan | None = None
    dedupe: bool = True  # False where Claim 3 proves the return stream has no duplicates

    def items(self, ctx: DocumentContext, bound: int) -> list[Item]:
        if ctx.profiler is not None:
            category = "OuterJoin-Select" if self.plan is not None else "Return-Select"
            with ctx.profiler.measure(category):
                return self._items(ctx, bound)
        return self._items(ctx, bound)

    def _items(self, ctx: DocumentContext, bound: int) -> list[Item]:
        if self.pattern is None:
            nodes = [bound]
        elif self.plan is not None:
            nodes = self.plan.groups(ctx, self.pattern.base - 1, self.dedupe).get(bound, [])
        else:
            nodes = search_all(ctx, bound, self.pattern)
        if not self.text:
            return list(nodes)
        return [(nid, index) for nid in nodes for index, _ in iter_text_nodes(ctx.nodes[nid])]

    def describe(self) -> str:
        if self.pattern is None:
            return "$bound"
        if self.plan is not None:
            how = "OuterJoin-Select over GroupBy" + ("" if self.dedupe else " (no DupElim: Claim 3)")
        else:
            how = "Return-Select[tree]"
        return f"{how}({format_pattern(self.pattern)}{'/text()' if self.text else ''})"


@dataclass
class SubscriptionPlan:
    """Everything needed to turn the engine's streams into one subscription's result."""

    sid: str
    text: str
    tree: ast.Subscription
    main: PatternPlan
    returns: tuple[ReturnItem, ...]
    template: Template
    wrapper: ElementTemplate | None
    held: list[PatternPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # rewrites applied

    @property
    def is_flwr(self) -> bool:
        return isinstance(self.tree.body, ast.Flwr)

    def bindings(self, ctx: DocumentContext) -> list[int]:
        """The bound nodes (FLWR) or selected nodes (filter), distinct and in document order."""
        key = (self.main, "bindings")
        bound = ctx.memo.get(key)
        if bound is None:
            bound = ctx.memo[key] = [t[-1] for t in self.main.tuples(ctx)]
        return bound  # type: ignore[return-value]

    def groups(self, ctx: DocumentContext, bound: list[int]) -> list[Group]:
        """groupSequence-listSequence: per binding, one list of nodes per return slot."""
        return [[item.items(ctx, b) for item in self.returns] for b in bound]


class Planner:
    """Interns pattern plans over one NFA and builds subscription plans for one strategy."""

    def __init__(
        self, nfa: Nfa, strategy: Strategy, optimize: Optimize = Optimize.QUERY, graph: DtdGraph | None = None
    ) -> None:
        self.nfa = nfa
        self.strategy = strategy
        self.optimize = optimize
        self.graph = graph if optimize.uses_dtd else None
        self._plans: dict[tuple[PathPattern, bool], PatternPlan] = {}
        self._refs: dict[int, int] = {}
        self._children: dict[int, list[PatternPlan]] = {}
        self._keys: dict[int, tuple[PathPattern, bool]] = {}

    # -- pattern plans ------------------------------------------------------------------------------

    def acquire(self, pattern: PathPattern, main: bool) -> PatternPlan:
        key = (pattern, main)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._build(pattern, main)
            self._keys[id(plan)] = key
            self._refs[id(plan)] = 0
        self._refs[id(plan)] += 1
        return plan

    def release(self, plan: PatternPlan) -> None:
        self._refs[id(plan)] -= 1
        if self._refs[id(plan)] == 0:
            del self._refs[id(plan)]
            del self._plans[self._keys.pop(id(plan))]
            self.nfa.release_path(plan.pattern.nav)
            for child in self._children.pop(id(plan), []):
                self.release(child)

    @property
    def pattern_plan_count(self) -> int:
        return len(self._plans)

    def _build(self, pattern: PathPattern, main: bool) -> PatternPlan:
        pid = self.nfa.add_path(pattern.nav)
        operators: list[object] = []
        children: list[PatternPlan] = []
        notes: list[str] = []
        if pattern.tested_fields:
            operators.append(Selection(pattern))
        for branch in pattern.branches:
            operators.append(self._join(pattern, branch.field, branch.pattern, children, notes))
        if main:
            claim = no_duplicates(pattern.nav, self.graph) if self.optimize.claims else None
            if claim is None:
                # scan DupElim is valid: the stream is ordered on its last field
                operators.append(DupElimScan(pattern.last))
            else:
                notes.append(f"{claim}: no duplicate bindings, DupElim removed")
        plan = PatternPlan(pattern, pid, tuple(operators), notes)
        self._children[id(plan)] = children
        return plan

    def _join(
        self, parent: PathPattern, at: int, branch: PathPattern, children: list[PatternPlan], notes: list[str]
    ) -> object:
        if not self.strategy.branches_in_nfa:
            return WhereFilter(at, branch)
        right = self.acquire(branch, main=False)
        children.append(right)
        claim = ordered_on(parent.nav, at, self.graph) if self.optimize.claims else None
        if claim is None:
            return SemiJoinHash(at, right)
        notes.append(f"{claim}: both inputs ordered on ${at + 1}, merge semijoin")
        return SemiJoinMerge(at, right)

    # -- rewrites -----------------------------------------------------------------------------------

    def rewrite(self, pattern: PathPattern, notes: list[str]) -> PathPattern:
        """Apply the DTD's navigation rewrites to a pattern and its branches (no-op without a DTD)."""
        if self.graph is None:
            return pattern
        nav = pattern.nav
        for rule in NAV_RULES:
            nav, applied = rule(nav, self.graph)
            notes.extend(n for n in applied if n not in notes)
        branches = tuple(Branch(b.field, self.rewrite(b.pattern, notes)) for b in pattern.branches)
        return PathPattern(nav, pattern.base, pattern.tests, branches)

    # -- subscription plans -------------------------------------------------------------------------

    def plan(self, sid: str, tree: ast.Subscription, text: str) -> SubscriptionPlan:
        body = tree.body
        notes: list[str] = []
        if isinstance(body, ast.Filter):
            main = self.acquire(self.rewrite(absolute_pattern(body.path), notes), main=True)
            returns = (ReturnItem(None),)
            return SubscriptionPlan(sid, text, tree, main, returns, Slot(0), None, [main], notes)
        main = self.acquire(self.rewrite(absolute_pattern(body.binding, body.where), notes), main=True)
        held = [main]
        slots: list[ast.RelPath] = []
        template: Template
        if isinstance(body.ret, ast.Constructor):
            template = compile_constructor(body.ret, slots)
        else:
            slots.append(body.ret)
            template = Slot(0)
        returns = tuple(self._return_item(main.pattern, path, held, notes) for path in slots)
        wrapper = make_wrapper(body.wrapper) if body.wrapper else None
        return SubscriptionPlan(sid, text, tree, main, returns, template, wrapper, held, notes)

    def _return_item(
        self, bound: PathPattern, path: ast.RelPath, held: list[PatternPlan], notes: list[str]
    ) -> ReturnItem:
        text = isinstance(path.tail, ast.TextTest)
        if not path.steps:
            return ReturnItem(None, text)
        pattern = self.rewrite(relative_pattern(bound.nav, path), notes)
        if not self.strategy.returns_in_nfa:
            return ReturnItem(pattern, text)
        plan = self.acquire(pattern, main=False)
        held.append(plan)
        claim = no_duplicates_on(pattern.nav, pattern.base - 1, self.graph) if self.optimize.claims else None
        return ReturnItem(pattern, text, plan, dedupe=claim is None)

    def drop(self, plan: SubscriptionPlan) -> None:
        for held in plan.held:
            self.release(held)
