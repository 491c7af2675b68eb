"""Build each subscription's post-processing plan over the shared NFA (paper 000 §3, §4).

The strategy says which paths go into the NFA: PathSharing-F puts only the binding (or filter) path
there and checks branches and return paths by searching the tree; -FW adds the predicate paths
(semijoins); -FWR adds the return paths too (OuterJoin-Select over shared GroupBys). Pattern plans
are interned and reference counted, so identical patterns share one plan, one NFA path and one
per-document result, and removing a subscription releases exactly what it held.
"""

from __future__ import annotations

from dataclasses import replace
from enum import Enum

from feedrouter.engine.nfa import Nfa
from feedrouter.errors import CompileError, CompileWarning, error
from feedrouter.lang import ast
from feedrouter.output.factory import Slot, Template, compile_constructor, compile_items, value_slots
from feedrouter.output.factory import wrapper_template as make_wrapper
from feedrouter.plan import backward
from feedrouter.plan.claims import no_duplicates, no_duplicates_on, ordered_on
from feedrouter.plan.dnf import MAX_DISJUNCTS, alternatives
from feedrouter.plan.never_matches import never_matches
from feedrouter.plan.nodesets import is_recursive, steps_of
from feedrouter.plan.operators import (
    AntiSemiJoin,
    DupElimScan,
    PatternPlan,
    Selection,
    SemiJoinHash,
    SemiJoinMerge,
    UnionPlan,
    WhereFilter,
)
from feedrouter.plan.optimize import Optimize, RuleContext
from feedrouter.plan.patterns import Branch, PathPattern, absolute_pattern, relative_pattern
from feedrouter.plan.results import ReturnItem, SubscriptionPlan, Upward
from feedrouter.plan.rules import rewrite as apply_rules
from feedrouter.plan.shared_join import SharedSelection, shared_selection_plan
from feedrouter.schema import DtdGraph

#: Why a join subscription is not planned here: it reads two streams across documents and hours.
JOIN_NOT_ROUTED = (
    "a join subscription (it imports the stream module) relates messages across documents and hours: "
    "the join stage evaluates it, per-document routing does not"
)


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


class Planner:
    """Interns pattern plans over one NFA and builds subscription plans for one strategy."""

    def __init__(
        self,
        nfa: Nfa,
        strategy: Strategy,
        optimize: Optimize = Optimize.QUERY,
        graph: DtdGraph | None = None,
        shared: bool = True,
    ) -> None:
        self.nfa = nfa
        self.shared = shared  # pull selections up over shared joins (shared post-processing)
        self.strategy = strategy
        self.optimize = optimize
        self.graph = graph if optimize.uses_dtd else None
        self._plans: dict[tuple[PathPattern, bool], PatternPlan] = {}
        # keyed by the intern key, not by id(): ids change when a compiled router is unpickled
        self._refs: dict[tuple[PathPattern, bool], int] = {}
        self._children: dict[tuple[PathPattern, bool], list[PatternPlan]] = {}
        self._returns: dict[tuple, tuple[ReturnItem, int]] = {}  # interned return items, ref counted
        # the forward paths backward steps became (feedrouter.plan.backward): their shared plans, by
        # path, for DocumentContext.member_set (an entry lives while some subscription holds it)
        self.members: dict[ast.AbsPath, PatternPlan] = {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("members", {})  # planners pickled before backward axes

    # -- pattern plans ------------------------------------------------------------------------------

    def acquire(self, pattern: PathPattern, main: bool) -> PatternPlan:
        key = (pattern, main)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._build(pattern, main)
            self._refs[key] = 0
        self._refs[key] += 1
        return plan

    def release(self, plan: PatternPlan) -> None:
        key = (plan.pattern, plan.main)
        self._refs[key] -= 1
        if self._refs[key] == 0:
            del self._refs[key]
            del self._plans[key]
            for path in [p for p, held in self.members.items() if held is plan]:
                del self.members[path]
            self.nfa.release_path(plan.pattern.nav)
            for child in self._children.pop(key, []):
                self.release(child)

    @property
    def pattern_plan_count(self) -> int:
        return len(self._plans)

    def _build(self, pattern: PathPattern, main: bool) -> PatternPlan:
        pid = self.nfa.add_path(pattern.nav)
        operators: list[object] = []
        children: list[PatternPlan] = []
        notes: list[str] = []
        shared = self._shared_selection(pattern, children, notes) if main else None
        if shared is not None:
            operators.append(shared)
        else:
            if pattern.tested_fields:
                operators.append(Selection(pattern))
            for branch in pattern.branches:
                operators.append(self._join(pattern, branch, children, notes))
        if main:
            claim = no_duplicates(pattern.nav, self.graph) if self.optimize.claims else None
            if claim is None:
                # scan DupElim is valid: the stream is ordered on its last field
                operators.append(DupElimScan(pattern.last))
            else:
                notes.append(f"{claim}: no duplicate bindings, DupElim removed")
        plan = PatternPlan(pattern, pid, tuple(operators), notes, main=main)
        self._children[pattern, main] = children
        return plan

    def _shared_selection(
        self, pattern: PathPattern, children: list[PatternPlan], notes: list[str]
    ) -> SharedSelection | None:
        """The selection pulled up over a shared join, where the pattern has that shape."""
        if not self.shared or is_recursive(steps_of(pattern.nav)):
            return None  # a recursive binding path is evaluated by node sets, not tuples
        if any(branch.negated for branch in pattern.branches):
            return None
        predicate = None
        if pattern.branches:
            if len(pattern.branches) != 1 or not self.strategy.branches_in_nfa:
                return None
            branch = pattern.branches[0].pattern
            # the predicate path without its test: one NFA path and plan for every constant
            predicate = self.acquire(PathPattern(branch.nav, branch.base), main=False)
        shared = shared_selection_plan(pattern, self.nfa.path_id)
        if shared is None:
            if predicate is not None:
                self.release(predicate)
            return None
        if predicate is not None:
            children.append(predicate)
        notes.append("selection pulled up over a shared join: one pass per document for every constant")
        return SharedSelection(shared)

    def _join(
        self, parent: PathPattern, branch: Branch, children: list[PatternPlan], notes: list[str]
    ) -> object:
        at = branch.field
        if not self.strategy.branches_in_nfa:
            return WhereFilter(at, branch.pattern, branch.negated)
        right = self.acquire(branch.pattern, main=False)
        children.append(right)
        if branch.negated:
            return AntiSemiJoin(at, right)
        claim = ordered_on(parent.nav, at, self.graph) if self.optimize.claims else None
        if claim is None:
            return SemiJoinHash(at, right)
        notes.append(f"{claim}: both inputs ordered on ${at + 1}, merge semijoin")
        return SemiJoinMerge(at, right)

    # -- rewrites -----------------------------------------------------------------------------------

    def rewrite(self, pattern: PathPattern, notes: list[str]) -> PathPattern:
        """Run the rewrite rules (:data:`feedrouter.plan.rules.RULES`, in order) on a pattern and its
        branches; the rewrites applied are added to ``notes`` (no-op below the ``dtd`` level)."""
        context = RuleContext(self.optimize, self.graph)
        pattern = apply_rules(pattern, context)
        _note(notes, context.applied())
        return pattern

    def _never_match_warning(self, plan: SubscriptionPlan) -> CompileWarning | None:
        """FR304 when the DTD proves the plan's subscription can never match (``dtd`` level only)."""
        if self.graph is None:
            return None
        reasons = [never_matches(alt.pattern, self.graph) for alt in plan.main.alternatives]
        if any(reason is None for reason in reasons):
            return None
        reason = "; ".join(dict.fromkeys(r for r in reasons if r is not None))
        return CompileWarning(plan.sid, "FR304", f"can never match: {reason}")

    # -- subscription plans -------------------------------------------------------------------------

    def plan(
        self, sid: str, tree: ast.Subscription, values: frozenset[int] | None = None
    ) -> SubscriptionPlan:
        """The plan of one parsed subscription; it keeps neither the tree nor the text. Its
        ``warning`` says when the DTD proves it can never match. ``values``: the return slots that
        are planned as attribute value templates (a join block's witness, whose return is a
        sequence of paths, says which of its slots deliver atomized values)."""
        plan = self._plan(sid, tree, values)
        plan.warning = self._never_match_warning(plan)
        return plan

    def _plan(
        self, sid: str, tree: ast.Subscription, values: frozenset[int] | None = None
    ) -> SubscriptionPlan:
        if isinstance(tree.body, ast.JoinFlwr):
            raise error("FR116", JOIN_NOT_ROUTED, source=sid)
        notes: list[str] = []
        tree = backward.forward(tree, notes)
        members = self._member_plans(tree, notes)
        plan = self._plan_forward(sid, tree, notes, values)
        plan.held.extend(members)
        return plan

    def _member_plans(self, tree: ast.Subscription, notes: list[str]) -> list[PatternPlan]:
        """The shared plans of the forward paths that backward steps became (the x-dag's joins)."""
        held: list[PatternPlan] = []
        for path in dict.fromkeys(backward.member_paths(tree)):
            self._member(path, path, held, notes)
        return held

    def _member(self, key: ast.AbsPath, path: ast.AbsPath, held: list[PatternPlan], notes: list[str]) -> None:
        """Plan ``path`` (already forward) as the node set of ``key`` for DocumentContext.member_set."""
        plan = self.acquire(self.rewrite(absolute_pattern(path), notes), main=True)
        self.members[key] = plan
        held.append(plan)

    def _upward_return(
        self, path: ast.RelPath, held: list[PatternPlan], notes: list[str], value: bool
    ) -> ReturnItem:
        """``$s/..``, ``$s/ancestor::story[@lang]/title``: the backward steps from the parent ids the
        run recorded, their predicates as shared node sets, the forward rest as the GroupBy of
        ``//story/title`` on the story. A named upper end is on an NFA path of its own (``//story``),
        so the run keeps its element for the result."""
        end = next((i for i, s in enumerate(path.steps) if not s.axis.backward), len(path.steps))
        chain, rest = path.steps[:end], path.steps[end:]
        steps = backward.up_steps(chain, notes)
        for member in dict.fromkeys(backward.member_paths(steps)):
            self._member(member, member, held, notes)
        if chain[-1].name is not None:  # the upper end's own NFA path: the run keeps its elements
            keeper = ast.AbsPath((ast.Step(ast.Axis.DESCENDANT, chain[-1].name),))
            self._member(keeper, keeper, held, notes)
        below = plan = None
        if rest:
            top = ast.Step(ast.Axis.DESCENDANT, chain[-1].name)
            forward = backward.forward_absolute(ast.AbsPath((top, *rest)), notes)
            for nested in dict.fromkeys(backward.member_paths(forward)):
                self._member(nested, nested, held, notes)
            # not through the DTD rules: they may rewrite '//story' into a longer path, and the
            # GroupBy must stay on the upper end's field (the first)
            below = absolute_pattern(forward)
            plan = self.acquire(below, main=False)
            held.append(plan)
        text = isinstance(path.tail, ast.TextTest)
        attribute = path.tail.name.clark if isinstance(path.tail, ast.AttributeTest) else ""
        upward = Upward(steps, below, plan)
        item = ReturnItem(None, text, attribute=attribute, value=value, upward=upward)
        return self._intern_return(item)

    def _forward_member(self, member: ast.AbsPath, held: list[PatternPlan], notes: list[str]) -> None:
        forward = backward.forward_absolute(member, notes)
        for nested in dict.fromkeys(backward.member_paths(forward)):
            self._member(nested, nested, held, notes)
        self._member(member, forward, held, notes)

    def _plan_forward(
        self, sid: str, tree: ast.Subscription, notes: list[str], value_slots_of: frozenset[int] | None = None
    ) -> SubscriptionPlan:
        body = tree.body
        if isinstance(body, ast.Filter):
            path = body.path
            if isinstance(path, ast.AbsPath) and path.tail is not None:
                return self._text_filter(sid, path, notes)
            main, held = self._main(path, (), notes)
            for rooted in body.document_if:  # '//a/..': the document node when the root is an 'a'
                self._member(rooted, rooted, held, notes)
            returns: tuple[ReturnItem, ...] = (self._intern_return(ReturnItem(None)),)
            return SubscriptionPlan(
                sid, False, main, returns, Slot(0), None, held, notes, document_if=body.document_if
            )
        assert isinstance(body, ast.Flwr)  # _plan refuses join subscriptions
        # a FLWR's return and order paths are planned from its binding's steps: those keep their names
        main, held = self._main(body.binding, body.where, notes, rename=False)
        slots: list[ast.RelPath] = []
        template: Template
        if isinstance(body.ret, ast.Constructor):
            template = compile_constructor(body.ret, slots)
        elif isinstance(body.ret, ast.Items):
            template = compile_items(body.ret, slots)
        else:
            slots.append(body.ret)
            template = Slot(0)
        bound = main.alternatives[0].pattern  # alternatives differ in conditions, not in navigation
        values = value_slots(template) if value_slots_of is None else value_slots_of
        returns = tuple(
            self._return_item(bound, path, held, notes, i in values) for i, path in enumerate(slots)
        )
        wrapper = make_wrapper(body.wrapper) if body.wrapper else None
        order = tuple(self._order_key(spec, held, notes) for spec in body.order)
        return SubscriptionPlan(sid, True, main, returns, template, wrapper, held, notes, order=order)

    def _order_key(self, spec: ast.OrderSpec, held: list[PatternPlan], notes: list[str]) -> ast.OrderSpec:
        """An ``order by`` key with backward steps: those at its start walked over the recorded
        parents, those in its predicates made forward (as a return path's)."""
        steps = spec.path.steps
        end = next((i for i, s in enumerate(steps) if not s.axis.backward), len(steps))
        rest = self._forward_relative(replace(spec.path, steps=steps[end:]), held, notes)
        if not end:
            return replace(spec, path=rest)
        upward = backward.up_steps(steps[:end], notes)
        for member in dict.fromkeys(backward.member_paths(upward)):
            self._member(member, member, held, notes)
        return replace(spec, path=rest, upward=upward)

    def _forward_relative(self, path: ast.RelPath, held: list[PatternPlan], notes: list[str]) -> ast.RelPath:
        """A forward path from the bound node whose predicates may hold backward steps
        (``$s/x[../y]``): those made forward, and the joins they became planned."""
        found = backward.forward_relative(path, notes)
        for member in dict.fromkeys(backward.member_paths(found)):
            self._member(member, member, held, notes)
        return found

    def _text_filter(self, sid: str, path: ast.AbsPath, notes: list[str]) -> SubscriptionPlan:
        """``//hedline/hl1/text()``: the elements that have text children, bound as a FLWR's are,
        and their text nodes returned through one slot (XQuery serializes them concatenated)."""
        has_text = ast.Exists(ast.RelPath((), ast.TextTest()))
        main, held = self._main(ast.AbsPath(path.steps, path.span), (has_text,), notes)
        returns = (self._intern_return(ReturnItem(None, text=True)),)
        return SubscriptionPlan(sid, True, main, returns, Slot(0), None, held, notes)

    def _main(
        self,
        binding: ast.AbsPath | ast.Union,
        where: tuple[ast.Condition, ...],
        notes: list[str],
        rename: bool = True,
    ) -> tuple[PatternPlan | UnionPlan, list[PatternPlan]]:
        """The main plan of a binding or filter path with its where conditions: one pattern plan, or
        a union of one per conjunctive alternative where an ``or`` splits (:mod:`feedrouter.plan.dnf`)
        or the filter is a union of paths. ``rename``: ``self::`` tests may name the path's steps."""
        paths = binding.paths if isinstance(binding, ast.Union) else (binding,)
        split = [alt for path in paths for alt in alternatives(path, where, rename)]
        if len(split) > MAX_DISJUNCTS:
            split = [(path, where) for path in paths]
        plans = [self.acquire(self.rewrite(absolute_pattern(b, w), notes), main=True) for b, w in split]
        if len(plans) == 1:
            return plans[0], plans
        what = "the union and its 'or'" if len(paths) > 1 else "'or'"
        notes.append(f"{what} split into {len(plans)} conjunctive alternatives (DNF), each shared, indexed")
        return UnionPlan(tuple(plans)), plans

    def _return_item(
        self, bound: PathPattern, path: ast.RelPath, held: list[PatternPlan], notes: list[str], value: bool
    ) -> ReturnItem:
        if path.steps and path.steps[0].axis.backward:
            return self._upward_return(path, held, notes, value)
        path = self._forward_relative(path, held, notes)
        text = isinstance(path.tail, ast.TextTest)
        attribute = path.tail.name.clark if isinstance(path.tail, ast.AttributeTest) else ""
        if not path.steps:
            return self._intern_return(ReturnItem(None, text, attribute=attribute, value=value))
        pattern = self.rewrite(relative_pattern(bound.nav, path), notes)
        if not self.strategy.returns_in_nfa:
            return self._intern_return(ReturnItem(pattern, text, attribute=attribute, value=value))
        plan = self.acquire(pattern, main=False)
        held.append(plan)
        claim = no_duplicates_on(pattern.nav, pattern.base - 1, self.graph) if self.optimize.claims else None
        item = ReturnItem(pattern, text, plan, dedupe=claim is None, attribute=attribute, value=value)
        return self._intern_return(item)

    def _intern_return(self, item: ReturnItem) -> ReturnItem:
        shared, refs = self._returns.get(item.key, (item, 0))
        self._returns[item.key] = (shared, refs + 1)
        return shared

    def _release_return(self, item: ReturnItem) -> None:
        shared, refs = self._returns[item.key]
        if refs == 1:
            del self._returns[item.key]
        else:
            self._returns[item.key] = (shared, refs - 1)

    def drop(self, plan: SubscriptionPlan) -> None:
        for item in plan.returns:
            self._release_return(item)
        for held in plan.held:
            self.release(held)


def _note(notes: list[str], applied: list[str]) -> None:
    notes.extend(n for n in applied if n not in notes)
