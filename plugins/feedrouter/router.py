"""The public entry point: compile subscriptions once, route many documents.

>>> router = Router.compile([("s1", "//title")])
>>> router.route(b"<book><title>XML</title></book>")
{'s1': b'<title>XML</title>'}
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from itertools import chain
from typing import Any
from typing import Literal as TypingLiteral

from lxml import etree

from feedrouter import lang
from feedrouter.engine.document import DocumentLimits, DocumentParser
from feedrouter.engine.nfa import Nfa, format_path
from feedrouter.engine.runtime import LazyDfa, run
from feedrouter.errors import (
    CompileError,
    CompileWarning,
    DocumentError,
    FeedrouterError,
    RoutingError,
    Span,
    SubscriptionError,
    error,
)
from feedrouter.join.plan import BlockSpec
from feedrouter.join.witness import RowReader, RowSink, Walked, WitnessRow, first_named_row, row_reader
from feedrouter.limits import ResultLimits
from feedrouter.output.defaults import complete_attribute_defaults
from feedrouter.output.factory import assemble_within, render_items_within
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.index import Probe, SelectionIndex, choose_probe, find_probes, probe_holds
from feedrouter.plan.operators import PatternPlan
from feedrouter.plan.optimize import Optimize
from feedrouter.plan.patterns import PathPattern
from feedrouter.plan.planner import Planner, Strategy
from feedrouter.plan.profile import Profiler
from feedrouter.plan.results import ReturnItem, SubscriptionPlan
from feedrouter.plan.sharing import PlanGroup, SharedPlans
from feedrouter.schema import DtdGraph
from feedrouter.schema.dtd import load_dtd

OnError = TypingLiteral["raise", "collect"]

_log = logging.getLogger(__name__)

#: What a router does with a document its feed DTD does not validate, when it uses DTD-driven
#: optimizations (they assume valid documents): route it with plans compiled without the DTD, or
#: refuse it (FR207) so that it is quarantined.
INVALID_DOCUMENT_POLICIES = ("fallback", "quarantine")


@dataclass
class RouteOutcome:
    """What one document gave each subscription: result bytes, or why it gets none.

    ``results`` holds the subscriptions that matched and whose results are delivered; ``failures``
    the ones that matched (or whose plan failed) but get nothing for this document, each with a
    :class:`~feedrouter.errors.RoutingError` saying why (FR310 and FR311 result limits, FR312 an
    internal error of the plan). A subscription is in at most one of the two.
    """

    results: dict[str, bytes] = field(default_factory=dict)
    failures: dict[str, RoutingError] = field(default_factory=dict)
    #: a join block's witnesses in this document, by block id (:meth:`Router.add_witness`)
    witnesses: dict[str, list[WitnessRow]] = field(default_factory=dict)


class Router:
    """Routes documents to the subscriptions they match, one shared pass per document.

    Build one with :meth:`compile`; change it with :meth:`add` and :meth:`remove`.
    """

    # class-level defaults: a router pickled before these settings existed unpickles with them
    result_limits: ResultLimits = ResultLimits()
    invalid_documents: str = "fallback"
    lazy_dfa: bool = True
    # built on first need in each process and never pickled (see __getstate__)
    _validator: etree.DTD | None = None
    _fallback: Router | None = None
    # join blocks compiled as witness plans: id -> (leaf count, default namespace per fragment,
    # whether only the first bound node's row is read); routers pickled before have no third
    _witnesses: dict[str, tuple[int, tuple[str, ...]] | tuple[int, tuple[str, ...], bool]] = {}
    _witness_specs: dict[str, BlockSpec] = {}
    # join blocks read off the parsed tree instead (a feed's clock, ``//pubDate``): id -> the
    # element name whose first element's string value they read (BlockSpec.first_element)
    _clocks: dict[str, str] = {}
    # join blocks whose nodes are every element of a name, found by a walk of the parsed tree
    # (BlockSpec.walked_element): id -> how they are read
    _walked: dict[str, Walked] = {}
    # per set of witness blocks of a group, how their rows are read (Router._witness_readers):
    # built on first need in each process, dropped whenever a plan is added or removed
    _readers: dict[tuple[str, ...], list[tuple[RowReader, list[str], bool]]]

    def __init__(
        self,
        *,
        dtd: object = None,
        strategy: str = "auto",
        limits: DocumentLimits | None = None,
        shared_selection: bool = True,
        lazy_dfa: bool = True,
        optimize: str = "auto",
        result_limits: ResultLimits | None = None,
        invalid_documents: str = "fallback",
    ) -> None:
        self.result_limits = _result_limits(result_limits)
        self.invalid_documents = _invalid_document_policy(invalid_documents)
        self.strategy = Strategy.parse(strategy)
        self.shared_selection = shared_selection
        self.lazy_dfa = lazy_dfa
        self.dtd = dtd
        self.graph = _dtd_graph(dtd, required=optimize == "dtd")
        self.optimize = Optimize.parse(optimize, self.graph is not None)
        self._nfa = Nfa()
        self._dfa = LazyDfa(self._nfa, memoize=lazy_dfa)
        self._planner = Planner(self._nfa, self.strategy, self.optimize, self.graph, shared=shared_selection)
        self._parser = DocumentParser(_dtd_text(dtd), limits)
        self._plans: dict[str, SubscriptionPlan] = {}
        # sid -> text, kept only where the fallback for invalid documents may have to recompile
        # them (validates_documents); the plans themselves keep neither text nor syntax tree
        self._texts: dict[str, str] = {}
        # subscriptions with positional predicates: while there are any, the run records sibling
        # positions as it streams (engine.runtime.run(positions=True))
        self._positional: set[str] = set()
        self._index: SelectionIndex[PlanGroup] = SelectionIndex()
        self._shared = SharedPlans()
        self.errors: dict[str, FeedrouterError] = {}
        self._warnings: dict[str, CompileWarning] = {}
        self._witnesses = {}
        self._witness_specs = {}
        self._clocks = {}
        self._walked = {}
        self._readers = {}

    @classmethod
    def compile(
        cls,
        subscriptions: Iterable[tuple[str, str]] | Mapping[str, str],
        dtd: object = None,
        strategy: str = "auto",
        on_error: OnError = "raise",
        limits: DocumentLimits | None = None,
        shared_selection: bool = True,
        lazy_dfa: bool = True,
        optimize: str = "auto",
        result_limits: ResultLimits | None = None,
        invalid_documents: str = "fallback",
    ) -> Router:
        """Compile ``(subscription_id, text)`` pairs into one router.

        With ``on_error="collect"`` a bad text is reported in :attr:`errors` and the others are served;
        with ``"raise"`` the first bad text raises after all were checked (its error lists them all).
        ``shared_selection`` files subscriptions by the constant of an equality test so that a
        document only evaluates the subscriptions whose constants it contains. ``lazy_dfa`` memoizes
        the NFA's transitions between state sets (off: every element recomputes them). ``optimize``
        is ``"none"``, ``"query"`` (Claims 1, 3, 4) or ``"dtd"`` (also Claims 2, 5, DTD rewrites and
        never-match warnings); ``"auto"`` uses the DTD when one is given.
        ``result_limits`` caps the result bytes of one document per subscription (FR310) and in
        total (FR311); ``invalid_documents`` (``"fallback"`` or ``"quarantine"``) says what happens
        to a document the DTD does not validate when DTD-driven optimizations are in use.
        """
        router = cls(
            dtd=dtd,
            strategy=strategy,
            limits=limits,
            shared_selection=shared_selection,
            lazy_dfa=lazy_dfa,
            optimize=optimize,
            result_limits=result_limits,
            invalid_documents=invalid_documents,
        )
        items = subscriptions.items() if isinstance(subscriptions, Mapping) else subscriptions
        for sid, text in items:
            try:
                router.add(sid, text)
            except FeedrouterError as exc:
                router.errors[str(sid)] = exc
            except Exception as exc:  # one text must never stop the others
                router.errors[str(sid)] = CompileError(
                    f"internal error while compiling this subscription ({type(exc).__name__}: {exc}); "
                    "please report it with the subscription text",
                    code="FR300",
                    source=str(sid),
                )
        router.reindex()
        if router.errors and on_error == "raise":
            raise _combined(list(router.errors.values()))
        return router

    # -- changing the population ----------------------------------------------------------------

    def add(self, subscription_id: str, text: str) -> None:
        """Compile one more subscription into the running router (no rebuild)."""
        sid = str(subscription_id)
        if sid in self._plans:
            raise CompileError(f"subscription {sid!r} is already compiled; remove it first", code="FR307")
        try:
            tree = lang.parse(text, source=sid)
        except SubscriptionError as exc:
            if exc.source is None:
                exc.with_source(sid)
            raise
        plan = self._planner.plan(sid, tree)
        if self.validates_documents:
            self._texts[sid] = text
        self._file(sid, plan, tree)
        if self._fallback is not None:
            self._fallback.add(sid, text)

    def add_witness(self, spec: BlockSpec) -> None:
        """Compile a join block (:mod:`feedrouter.join.plan`) as a witness plan: documents routed from
        now on report its bound nodes' leaf values and fragments in ``RouteOutcome.witnesses``.
        A block compiled before is replaced (its leaves or fragments may have grown).

        A block that reads the first element of a name (a feed's clock, ``//pubDate``:
        :meth:`~feedrouter.join.plan.BlockSpec.first_element`) takes no plan: its row is read off
        the parsed tree (:func:`~feedrouter.join.witness.first_named_row`), the same row. Nor does
        a block that binds every element of a name (``//item``, a feed's factored base) where the
        compiled kernel reads its rows (:class:`~feedrouter.join.witness.Walked`): its nodes are
        found by a walk of the tree, their rows read as its plan would read them."""
        if spec.id in self._witnesses or spec.id in self._clocks or spec.id in self._walked:
            self.remove(spec.id)
        name = _first_element(spec)
        walked = None if name is not None else self._walked_block(spec)
        if name is not None:
            self._clocks = {**self._clocks, spec.id: name}
        elif walked is not None:
            self._walked = {**self._walked, spec.id: walked}
        if name is not None or walked is not None:
            if self._fallback is not None:
                self._fallback.add_witness(spec)
            return
        tree = spec.subscription()
        plan = self._planner.plan(spec.id, tree, spec.value_slots())
        namespaces = tuple(f.default_ns for f in spec.fragments.values())
        self._witnesses[spec.id] = (len(spec.leaves), namespaces, spec.first)
        if self.validates_documents:  # the fallback for invalid documents compiles it again
            self._witness_specs[spec.id] = spec
        self._file(spec.id, plan, tree)
        if self._fallback is not None:
            self._fallback.add_witness(spec)

    def _walked_block(self, spec: BlockSpec) -> Walked | None:
        """How a block that binds every element of a name is read off the tree, or None: it is
        bound otherwise, or a row of it would need the shared NFA's streams. Its return items come
        from a plan of its own, compiled without the DTD (a walk finds every such element of any
        document, valid or not) into an automaton of its own (the shared one gains nothing)."""
        name = _walked_element(spec)
        if name is None:
            return None
        planner = Planner(Nfa(), self.strategy, Optimize.QUERY, None, shared=self.shared_selection)
        plan = planner.plan(spec.id, spec.subscription(), spec.value_slots())
        namespaces = tuple(f.default_ns for f in spec.fragments.values())
        return Walked.of(name, spec.first, plan.returns, len(spec.leaves), namespaces)

    def _file(self, sid: str, plan: SubscriptionPlan, tree: lang.ast.Subscription) -> None:
        """Put a compiled plan where routing finds it: its shared group and the selection index."""
        self._plans[sid] = plan
        self._readers = {}
        if lang.ast.mentions(tree, lang.ast.Position):
            self._positional.add(sid)
        if plan.warning is not None:  # the planner's never-match check (FR304)
            self._warnings[sid] = plan.warning
        group, created = self._shared.join(plan)
        if sid in self._witnesses:
            group.witnesses = (*group.witnesses, sid)
        if created:
            group.options = [self._probes(alt.pattern) for alt in plan.main.alternatives]
            if plan.document_if:  # the document node may be selected where no element is: no probe
                group.options = [[] for _ in group.options]
            group.options = [self._index.offer(options) for options in group.options]
            self._choose_entries(group, [alt.pid for alt in plan.main.alternatives])
            if len(group.entries) > 1:
                self._index.repeats = True  # a union is filed once per alternative
            for pid, probe in group.entries:
                self._index.add(group, pid, probe)
        self.errors.pop(sid, None)

    def _probes(self, pattern: PathPattern) -> list[Probe]:
        """The tests the selection index may file a main pattern under (none: by its binding path)."""
        if not self.shared_selection:
            return []
        return find_probes(pattern, self._nfa.path_id, self.strategy.branches_in_nfa)

    def reindex(self) -> None:
        """File every group under its most selective test as the whole population now estimates
        it (:func:`~feedrouter.plan.index.choose_probe`). Adding subscriptions one by one files the
        early ones with little to go on; :meth:`compile` reindexes at its end, and whoever adds a
        batch (join blocks, a plan build) should too. Results do not change, only the work."""
        for group in self._shared.groups():
            options = getattr(group, "options", None)
            if not options:  # pickled before groups kept their options, or nothing to choose
                continue
            before = group.entries
            self._choose_entries(group, [pid for pid, _ in before])
            if group.entries == before:
                continue
            for pid, probe in before:
                self._index.remove(group, pid, probe)
            for pid, probe in group.entries:
                self._index.add(group, pid, probe)

    def _choose_entries(self, group: PlanGroup, pids: list[int]) -> None:
        """Where the index files the group (one entry per alternative) and, for a single entry, the
        group's other tests, checked before its plan runs, the most selective first."""
        spread = self._index.spread
        group.entries = [
            (pid, choose_probe(options, spread)) for pid, options in zip(pids, group.options, strict=True)
        ]
        group.probe = group.entries[0][1]
        others = [p for p in group.options[0] if p is not group.probe] if len(pids) == 1 else []
        group.checks = tuple(sorted(others, key=lambda probe: -spread(probe.site)))

    def remove(self, subscription_id: str) -> None:
        """Take a subscription out; the NFA and shared plans release what only it used."""
        sid = str(subscription_id)
        if sid in self._clocks or sid in self._walked:
            self._clocks = {k: v for k, v in self._clocks.items() if k != sid}
            self._walked = {k: v for k, v in self._walked.items() if k != sid}
            if self._fallback is not None:
                self._fallback.remove(sid)
            return
        plan = self._plans.pop(sid, None)
        if plan is None:
            raise CompileError(f"no subscription {sid!r} is compiled in this router", code="FR301")
        group, emptied = self._shared.leave(plan)
        group.witnesses = tuple(member for member in group.witnesses if member != sid)
        self._readers = {}
        if emptied:
            # routers pickled before unions knew one entry, the group's probe
            entries = getattr(group, "entries", None) or [(plan.main.alternatives[0].pid, group.probe)]
            for pid, probe in entries:
                self._index.remove(group, pid, probe)
            for options in getattr(group, "options", ()):
                self._index.withdraw(options)
        self._warnings.pop(sid, None)
        self._texts.pop(sid, None)
        self._positional.discard(sid)
        if sid in self._witnesses:
            self._witnesses = {k: v for k, v in self._witnesses.items() if k != sid}
            self._witness_specs = {k: v for k, v in self._witness_specs.items() if k != sid}
        self._planner.drop(plan)
        if self._fallback is not None and sid in self._fallback:
            self._fallback.remove(sid)

    # -- routing --------------------------------------------------------------------------------

    def route(self, document: bytes, source: str | None = None) -> dict[str, bytes]:
        """Route one document: ``{subscription_id: result bytes}`` for the subscriptions it matches.

        Subscriptions refused a result (see :meth:`route_outcome`) are left out. Raises
        :class:`DocumentError` (with line and column) for a malformed or hostile document.
        """
        return self._route(document, source, None).results

    def route_outcome(
        self, document: bytes, source: str | None = None, sink: RowSink | None = None
    ) -> RouteOutcome:
        """Route one document and say what each matched subscription gets: its result, or why not.

        With ``sink`` (a routing task's batch of witnesses, :class:`feedrouter.join.batches.
        RowSink`), the join blocks read by a walk pack their rows there as message
        ``sink.message`` instead of giving them in :attr:`RouteOutcome.witnesses` (the nodes the
        kernel declines on are still given there); a document that cannot be routed takes them
        back.

        Raises :class:`DocumentError` for a document that cannot be routed at all.
        """
        if sink is None or not self._walked:
            return self._route(document, source, None)
        try:
            return self._route(document, source, None, sink)
        except BaseException:
            sink.drop_message()  # the message is not routed: none of its rows may stay
            raise

    def profile(self, documents: Iterable[bytes]) -> dict[str, float]:
        """Route documents and return exclusive seconds per operator category (paper 000, Table 2).

        Categories: parse + NFA, shared selection, path-tuples, node sets, Selection, DupElim, SemiJoin,
        Where-Filter, Return-Select, OuterJoin-Select, message factory, and garbage collection
        (Python's collector, timed apart from the operator it interrupted). They add up to the total.
        """
        profiler = Profiler()
        with profiler.collecting():
            for document in documents:
                self._route(document, None, profiler)
        return dict(profiler.seconds)

    def _route(
        self, document: bytes, source: str | None, profiler: Profiler | None, sink: RowSink | None = None
    ) -> RouteOutcome:
        with _measure(profiler, "parse + NFA"):
            events = self._parser.events(document, source)
            first = next(events)  # the document element's start: the whole tree is parsed by now
            root = first[1]
            complete_attribute_defaults(root, document, self._parser.dtd_text, source)
            if self.validates_documents and not self._valid(root, source):
                return self._invalid_document_fallback()._route(document, source, profiler, sink)
            matches = run(
                self._dfa, chain((first,), events), self._parser.limits.max_depth, bool(self._positional)
            )
        ctx = DocumentContext(
            matches, source, profiler, max_work=self._parser.limits.max_work, members=self._planner.members
        )
        with _measure(profiler, "shared selection"):
            # the index yields groups in an order fixed by the router's history (dicts keep order,
            # and so does pickling): results come out in the same order every time
            candidates = self._index.candidates(ctx)
        outcome = RouteOutcome()
        results = outcome.results
        budget = _ResultBudget(self.result_limits)
        if self._clocks or self._walked:
            self._read_off_tree(root, ctx, outcome, budget, sink)
        per_subscription = budget.limits.per_subscription
        for group in candidates:
            plan = group.plan
            checks = group.checks  # the class default for groups pickled before checks
            if checks and not all(probe_holds(ctx, probe) for probe in checks):
                continue
            members: Iterable[str] = group.members
            try:
                bound = plan.bindings(ctx)
                if not bound:
                    continue
                if budget.exhausted:
                    # past the document's limit nothing more is built: the rest get FR311
                    _fail(outcome, members, budget.refusal(source))
                    continue
                limit = min(per_subscription, budget.left)
                if self._witnesses and group.witnesses:  # an ordinary router stops at its own table
                    members = self._witnessed(group, ctx, bound, limit, outcome, budget)
                    if not members:
                        continue  # the group's members are all join blocks: no result bytes to build
                    if budget.exhausted:
                        _fail(outcome, members, budget.refusal(source))
                        continue
                    # the blocks' rows took their share of what the document may still build
                    limit = min(per_subscription, budget.left)
                if profiler is None:
                    result = (
                        assemble_within(plan.code, plan.wrapper, ctx, bound, limit)
                        if plan.is_flwr
                        else render_items_within(bound, ctx, limit)
                    )
                else:
                    with profiler.measure("message factory"):
                        result = (
                            assemble_within(plan.code, plan.wrapper, ctx, bound, limit)
                            if plan.is_flwr
                            else render_items_within(bound, ctx, limit)
                        )
            except DocumentError:
                raise  # the document itself cannot be routed (e.g. past its work budget)
            except Exception as exc:  # a bug in one plan must not cost the other subscriptions
                _log.warning("plan of %s failed on %s", sorted(members), source, exc_info=True)
                _fail(outcome, members, _internal_failure(exc, source))
                continue
            if result is None:  # given up past its limit, never built whole
                _fail(outcome, members, budget.refuse(limit, source))
                continue
            budget.left -= len(result)
            # one result object for every member: identical plans build their bytes once
            for sid in members:
                results[sid] = result
        return outcome

    def _read_off_tree(
        self,
        root: etree._Element,
        ctx: DocumentContext,
        outcome: RouteOutcome,
        budget: _ResultBudget,
        sink: RowSink | None,
    ) -> None:
        """File the rows of the blocks read off the tree, first: the clocks (:attr:`_clocks`: a
        message's event time is a few bytes, and without it the message takes part in no join),
        then the blocks found by a walk (:attr:`_walked`), packed into ``sink`` where there is one
        and it numbers the block (:meth:`route_outcome`)."""
        source = ctx.source
        for block, name in self._clocks.items():
            allowed = min(budget.limits.per_subscription, budget.left)
            try:
                found = first_named_row(root, name, allowed)
            except Exception as exc:  # a bug in one block must not cost the other subscriptions
                _block_failed(block, exc, outcome, source)
                continue
            self._file_rows(block, found, allowed, outcome, budget, source)
        for block, walked in self._walked.items():
            allowed = min(budget.limits.per_subscription, budget.left)
            code = None if sink is None else sink.code(block)
            try:
                if code is None:
                    found = walked.rows(ctx, root, allowed)
                else:
                    assert sink is not None
                    found = walked.rows_into(ctx, root, allowed, sink, code)
            except DocumentError:
                raise  # the document itself cannot be routed (past its work budget)
            except Exception as exc:
                _block_failed(block, exc, outcome, source)
                continue
            self._file_rows(block, found, allowed, outcome, budget, source)

    @staticmethod
    def _file_rows(
        block: str,
        found: tuple[list[WitnessRow], int] | None,
        allowed: int,
        outcome: RouteOutcome,
        budget: _ResultBudget,
        source: str | None,
    ) -> None:
        """A block's rows read off the tree into ``outcome`` (None: refused past ``allowed``)."""
        if found is None:
            outcome.failures[block] = budget.refuse(allowed, source)
            return
        rows, size = found
        budget.left -= size  # rows packed into a routing task's batch count too
        if rows:
            outcome.witnesses[block] = rows

    def _witnessed(
        self,
        group: PlanGroup,
        ctx: DocumentContext,
        bound: list[int],
        limit: int,
        outcome: RouteOutcome,
        budget: _ResultBudget,
    ) -> list[str]:
        """File the witnesses of the group's join blocks; the group's other members, the ordinary
        subscriptions that share the blocks' plan (their results are built after the rows, within
        what the rows left of the document's limit). A block whose rows fail to be read fails
        alone: the group's other blocks and subscriptions are not affected."""
        blocks = group.witnesses
        for reader, members, first in self._witness_readers(blocks, group.plan.returns):
            allowed = min(limit, budget.left)  # an earlier shape of the group took its share
            try:
                found = reader.rows(ctx, bound[:1] if first else bound, allowed)
            except DocumentError:
                raise  # the document itself cannot be routed (past its work budget)
            except Exception as exc:
                for block in members:
                    _block_failed(block, exc, outcome, ctx.source)
                continue
            if found is None:
                refusal = budget.refuse(allowed, ctx.source)
                for block in members:
                    outcome.failures[block] = refusal
                continue
            rows, size = found
            budget.left -= size
            for block in members:
                outcome.witnesses[block] = rows
        if len(blocks) == len(group.members):
            return []
        return [sid for sid in group.members if sid not in blocks]

    def _witness_readers(
        self, blocks: tuple[str, ...], returns: Sequence[ReturnItem]
    ) -> list[tuple[RowReader, list[str], bool]]:
        """How a group's witness rows are read: one reader per way its blocks split the plan's
        returns between leaves and fragments (`//item[@lang = "en"]` wanting `author`'s value,
        `//item where $w/@lang = "en"` its copy) and whether it reads the first bound node only (an
        event time), with the blocks it serves; worked out once per process and set of blocks
        (routing asks for it for every witness group a document binds). The blocks alone are the
        key: a block belongs to one group, whose plan gives ``returns``, and any plan coming or
        going drops what was worked out."""
        readers = self._readers.get(blocks)
        if readers is None:
            shapes: dict[tuple[int, tuple[str, ...], bool], list[str]] = {}
            for block in blocks:
                leaves, namespaces, *first = self._witnesses[block]
                shapes.setdefault((leaves, namespaces, bool(first and first[0])), []).append(block)
            readers = [
                (row_reader(returns, leaves, namespaces), members, first)
                for (leaves, namespaces, first), members in shapes.items()
            ]
            self._readers[blocks] = readers
        return readers

    # -- documents the DTD-driven plans cannot serve ----------------------------------------------

    @property
    def validates_documents(self) -> bool:
        """Whether each document is checked against the feed DTD before routing: DTD-driven
        optimizations (rewrites such as ``//title`` -> ``/bib/book/title``) hold for valid documents only."""
        return self.graph is not None and self.optimize.uses_dtd

    def _valid(self, root: etree._Element, source: str | None) -> bool:
        """Whether the document is valid against the feed DTD (and rooted where it says); with the
        ``"quarantine"`` policy an invalid one raises FR207 here."""
        graph = self.graph
        assert graph is not None
        validator = self._validator
        if validator is None:
            validator = self._validator = load_dtd(graph.text.encode("utf-8"), graph.source)
        name = _written_name(root)
        if name != graph.root:
            problem, span = f"its document element is <{name}>, the DTD's is <{graph.root}>", None
        elif validator.validate(root):
            return True
        else:
            problem, span = _first_problem(validator)
        if self.invalid_documents == "quarantine":
            raise error(
                "FR207",
                f"the document is not valid against the feed DTD: {problem}; this feed quarantines "
                "documents its DTD does not validate (invalid_documents='quarantine')",
                source=source,
                span=span,
            )
        return False

    def _invalid_document_fallback(self) -> Router:
        """A router of the same subscriptions without DTD-driven optimizations, compiled on the first
        invalid document and kept (in sync through :meth:`add` and :meth:`remove`, never pickled)."""
        fallback = self._fallback
        if fallback is None:
            fallback = Router(
                dtd=self.dtd,
                strategy=self.strategy.value,
                limits=self._parser.limits,
                shared_selection=self.shared_selection,
                lazy_dfa=self.lazy_dfa,
                optimize="query",
                result_limits=self.result_limits,
            )
            fallback._clocks = dict(self._clocks)
            fallback._walked = dict(self._walked)  # read off the tree without the DTD already
            for sid in self._plans:
                try:
                    spec = self._witness_specs.get(sid)
                    if spec is not None:
                        fallback.add_witness(spec)
                    else:
                        fallback.add(sid, self._texts[sid])
                except Exception:  # compiled once already: a text that fails here is a bug of ours
                    _log.warning("subscription %s does not compile without the DTD", sid, exc_info=True)
            self._fallback = fallback
        return fallback

    def __getstate__(self) -> dict[str, object]:
        # lxml's DTD object does not pickle, and the fallback is rebuilt where it is needed
        state = dict(self.__dict__)
        state.pop("_validator", None)
        state.pop("_fallback", None)
        state.pop("_readers", None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._readers = {}
        self.__dict__.setdefault("_positional", set())  # older routers: positions from the tree
        # older routers have no join blocks: their own tables, or add_witness would fill the class's
        self.__dict__.setdefault("_witnesses", {})
        self.__dict__.setdefault("_witness_specs", {})
        if "_texts" not in state:  # pickled when each plan kept its own text
            plans: dict[str, SubscriptionPlan] = state["_plans"]  # type: ignore[assignment]
            self._texts = {
                sid: plan.__dict__.pop("text") for sid, plan in plans.items() if "text" in plan.__dict__
            }
            for plan in plans.values():
                plan.__dict__.pop("tree", None)

    # -- introspection --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._plans) - len(self._witnesses)

    def __contains__(self, subscription_id: object) -> bool:
        return str(subscription_id) in self._plans

    @property
    def warnings(self) -> list[CompileWarning]:
        """Accepted subscriptions a user should look at (e.g. they can never match under the DTD)."""
        return list(self._warnings.values())

    @property
    def subscription_ids(self) -> list[str]:
        """The compiled subscriptions (join blocks' witness plans are not subscriptions)."""
        return [sid for sid in self._plans if sid not in self._witnesses]

    @property
    def witness_blocks(self) -> list[str]:
        """The ids of the join blocks compiled as witness plans or read off the tree (:meth:`add_witness`)."""
        return [*self._witnesses, *self._clocks, *self._walked]

    @property
    def nfa(self) -> Nfa:
        return self._nfa

    def stats(self) -> dict[str, int]:
        return {
            "subscriptions": len(self),
            "distinct_paths": self._nfa.path_count,
            "nfa_states": self._nfa.state_count,
            "pattern_plans": self._planner.pattern_plan_count,
            "shared_plans": len(self._shared),
            "dfa_states": self._dfa.size,
        }

    def compiled(self, subscription_id: str) -> tuple[SubscriptionPlan, PlanGroup]:
        """A subscription's compiled plan and the group of subscriptions that share it (what
        :meth:`explain` reads), for tools that account for a plan in their own words.

        Raises:
            CompileError: [FR301] no such subscription in this router.
        """
        sid = str(subscription_id)
        plan = self._plans.get(sid)
        if plan is None:
            raise CompileError(f"no subscription {sid!r} is compiled in this router", code="FR301")
        return plan, self._shared.group_of(plan)

    def explain(self, subscription_id: str) -> str:
        """A readable account of a subscription: its paths, the NFA states it shares, its plan."""
        sid = str(subscription_id)
        plan, group = self.compiled(sid)
        kind = "FLWR" if plan.is_flwr else "filter"
        lines = [
            f"subscription {sid} ({kind}), strategy {self.strategy.value}, optimize {self.optimize.value}"
        ]
        lines.extend(f"  {note}" for note in plan.notes)
        if len(group.members) > 1:
            others = len(group.members) - 1
            lines.append(f"  shares its whole plan and result with {others} other subscription(s)")
        if sid in self._warnings:
            lines.append(f"  warning: {self._warnings[sid].message}")
        lines.append("paths in the shared NFA:")
        for held in plan.held:
            lines.extend(self._explain_path(held))
        lines.append("plan:")
        lines.extend(f"  {step}" for step in plan.main.describe())
        lines.extend(f"  return slot {i}: {item.describe()}" for i, item in enumerate(plan.returns))
        entries = getattr(group, "entries", None) or [(0, group.probe)]
        for _, probe in entries:
            if probe is not None:
                site = probe.site
                how = "hashed" if probe.op.value == "=" else "sorted"
                what = f"{site.kind.value}{site.attribute}"
                if site.call is not None:
                    keyword = site.call.name in ("contains", "starts-with", "ends-with")
                    how, what = ("keywords" if keyword else how), f"{site.call.name}()"
                lines.append(
                    f"shared selection ({how}): filed under path {site.pid} field ${site.field + 1} "
                    f"({what}) {probe.op.value} {probe.key!r}"
                )
        return "\n".join(lines)

    def _explain_path(self, held: PatternPlan) -> list[str]:
        out = []
        for pattern in held.pattern.walk():
            pid = self._nfa.path_id(pattern.nav)
            if pid is None:
                continue
            states = self._nfa.states_of(pattern.nav)
            shared = sum(1 for s in states[1:] if self._nfa.sharing_of(s) > 1)
            out.append(
                f"  path {pid}: {format_path(pattern.nav)}  states {states[1:]}"
                f" ({shared} shared with other paths)"
            )
        return out


class _ResultBudget:
    """The result bytes one document may still build: per subscription, and for all together.

    The document's total counts each distinct result once (identical plans share one bytes object)
    and, for a result given up past a limit, the allowance it was built within: what a refused
    result built stays in the document's caches until the document is done, so it counts too.
    ``left`` is what the document may still build.
    """

    __slots__ = ("exhausted", "left", "limits")

    def __init__(self, limits: ResultLimits) -> None:
        self.limits = limits
        self.left = limits.per_document
        self.exhausted = False

    def refuse(self, limit: int, source: str | None) -> RoutingError:
        """Why a result that passed ``limit`` is refused (and the rest too, past the document's)."""
        self.left -= limit
        if limit == self.limits.per_subscription:
            return error(  # type: ignore[return-value]
                "FR310",
                f"the result is larger than the per-subscription limit of {self.limits.per_subscription} "
                "bytes for one document; nothing is delivered for this document",
                source=source,
            )
        self.exhausted = True
        return self.refusal(source)

    def refusal(self, source: str | None) -> RoutingError:
        return error(  # type: ignore[return-value]
            "FR311",
            f"the document's results together exceed the per-document limit of {self.limits.per_document} "
            "bytes; this subscription's result is not delivered for this document",
            source=source,
        )


def _first_element(spec: BlockSpec) -> str | None:
    """The element name a block is read off the tree by, or None: it is a witness plan (one
    seam for both: the tests turn reading off the tree off to compare the two ways)."""
    return spec.first_element()


def _walked_element(spec: BlockSpec) -> str | None:
    """The element name whose every element a block binds, when it is found by a walk of the tree
    (:meth:`Router._walked_block`); None: a witness plan (the tests' seam, as :func:`_first_element`)."""
    return spec.walked_element()


def _written_name(element: etree._Element) -> str:
    """An element's name as the document writes it (``prefix:local``), as DTDs name elements."""
    local = etree.QName(element).localname
    return f"{element.prefix}:{local}" if element.prefix else local


def _first_problem(validator: etree.DTD) -> tuple[str, Span | None]:
    # lxml-stubs 0.5 declares none of _ErrorLog's methods (iteration, filter_from_errors)
    log: Any = validator.error_log
    entries = list(log.filter_from_errors()) or list(log)
    if not entries:
        return "libxml2 gave no reason", None
    first = entries[0]
    more = f" (and {len(entries) - 1} more)" if len(entries) > 1 else ""
    return f"{first.message}{more}", Span(first.line, first.column) if first.line else None


def _fail(outcome: RouteOutcome, members: Iterable[str], failure: RoutingError) -> None:
    for sid in members:
        outcome.failures[sid] = failure


def _block_failed(block: str, exc: Exception, outcome: RouteOutcome, source: str | None) -> None:
    """A join block's rows could not be read on a document (a bug of ours): its failure, logged."""
    _log.warning("witness block %s failed on %s", block, source, exc_info=True)
    outcome.failures[block] = _internal_failure(exc, source)


def _internal_failure(exc: Exception, source: str | None) -> RoutingError:
    return error(  # type: ignore[return-value]
        "FR312",
        f"internal error while evaluating this subscription's plan ({type(exc).__name__}: {exc}); "
        "the document's other subscriptions are not affected; please report it with the subscription text",
        source=source,
    )


def _result_limits(limits: ResultLimits | None) -> ResultLimits:
    if limits is None:
        return ResultLimits()
    if not isinstance(limits, ResultLimits):
        raise CompileError(f"result_limits must be a ResultLimits, not {type(limits).__name__}", code="FR302")
    for name in ("per_subscription", "per_document"):
        value = getattr(limits, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise CompileError(
                f"result_limits.{name} must be a positive number of bytes, not {value!r}", code="FR302"
            )
    return limits


def _invalid_document_policy(policy: str) -> str:
    if policy not in INVALID_DOCUMENT_POLICIES:
        choices = " or ".join(repr(p) for p in INVALID_DOCUMENT_POLICIES)
        raise CompileError(f"invalid_documents must be {choices}, not {policy!r}", code="FR302")
    return policy


def _measure(profiler: Profiler | None, category: str) -> AbstractContextManager[object]:
    return profiler.measure(category) if profiler is not None else nullcontext()


def _dtd_graph(dtd: object, required: bool) -> DtdGraph | None:
    """The DTD element graph for optimizations; a DTD that only declares entities has none."""
    if dtd is None or isinstance(dtd, DtdGraph):
        return dtd
    try:
        return DtdGraph.from_text(_dtd_text(dtd) or "")
    except CompileError:
        if required:
            raise
        return None


def _dtd_text(dtd: object) -> str | None:
    if dtd is None:
        return None
    if isinstance(dtd, bytes):
        return dtd.decode("utf-8")
    if isinstance(dtd, str):
        return dtd
    text = getattr(dtd, "text", None)
    if isinstance(text, bytes):
        return text.decode("utf-8")
    if isinstance(text, str):
        return text
    raise CompileError(f"dtd must be DTD text or a DtdGraph, not {type(dtd).__name__}", code="FR303")


def _combined(errors: list[FeedrouterError]) -> FeedrouterError:
    """One error that reports every bad subscription of a compile, each under its own id."""
    if len(errors) == 1:
        return errors[0]
    first = errors[0]
    message = "\n".join(str(err) for err in errors)
    combined = type(first)(f"{len(errors)} subscriptions failed to compile:\n{message}", code=first.code)
    combined.details = [detail for err in errors for detail in err.details]
    return combined
