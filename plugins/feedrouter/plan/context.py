"""Per-document state shared by every subscription's plan: nodes, values, caches, serializations.

:class:`DocumentContext` is also the view of the document the message factory reads
(:class:`feedrouter.output.view.DocumentView`): nodes by id, serializations, slot bytes, profiler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, cast

from lxml import etree

from feedrouter.engine.document import attribute_values, is_attribute_wildcard, iter_text_nodes
from feedrouter.engine.nfa import is_namespace_wildcard, tag_matches
from feedrouter.engine.runtime import Matches, Nodes, PathTuple
from feedrouter.errors import error
from feedrouter.lang import ast
from feedrouter.limits import DEFAULT_MAX_WORK
from feedrouter.output.view import SlotBytes
from feedrouter.plan import evaluate
from feedrouter.plan.patterns import LocalTest, PathPattern, TestKind
from feedrouter.plan.profile import Profiler
from feedrouter.plan.values import comparator

if TYPE_CHECKING:  # the modules that fill these caches import this one
    from feedrouter.plan.nodesets import NodeFilter, Step
    from feedrouter.plan.operators import PatternPlan
    from feedrouter.plan.search import BranchHolders
    from feedrouter.plan.shared_join import JoinSignature, SharedJoin

#: A path with two '//' steps or more has up to depth^k path-tuples per node it ends on. Its plans
#: use the tuples while a document gives it at most this many per such node (plus the slack), and
#: node sets past that (:mod:`feedrouter.plan.nodesets`): ordinary documents keep the shared streams,
#: recursive ones cost time linear in their size either way.
TUPLES_PER_NODE = 8
TUPLES_SLACK = 64

_ELEMENT = etree.Element  # the tag filter lxml uses for "elements only" in child/descendant iteration
# XPath's string(): the text nodes of the subtree joined by libxml2, as itertext() would give them
# (comments and processing instructions left out) but without a Python string per text node.
_STRING_VALUE = etree.XPath("string()", smart_strings=False)


def element_string(element: etree._Element) -> str:
    """An element's XPath string value: the text nodes of its subtree, joined by libxml2, or
    without an XPath run its text when it has no child of any kind (comments and entity
    references are children in lxml)."""
    return (element.text or "") if len(element) == 0 else cast(str, _STRING_VALUE(element))


@dataclass(slots=True)
class PlanCaches:
    """One document's results of shared sub-plans, one typed table per kind of result.

    Plans are interned, so keying by the plan (or pattern, steps, signature) makes identical
    sub-plans of different subscriptions run once per document. Each table is filled by one module.
    """

    # feedrouter.plan.operators: a PatternPlan's answers, by plan (and field, anchor)
    node_sets: dict[PatternPlan, list[list[int]]] = field(default_factory=dict)  # qualifying[k]
    filters: dict[PatternPlan, list[NodeFilter]] = field(default_factory=dict)  # per field
    key_sets: dict[tuple[PatternPlan, int], set[int]] = field(default_factory=dict)
    # feedrouter.plan.backward: the nodes positioned backward steps reach from a path's nodes
    reached: dict[ast.ReachedFrom, set[int]] = field(default_factory=dict)
    key_lists: dict[tuple[PatternPlan, int], list[int]] = field(default_factory=dict)
    groups: dict[tuple[PatternPlan, int], dict[int, list[int]]] = field(default_factory=dict)
    anchor_groups: dict[tuple[PatternPlan, int, int], list[int]] = field(default_factory=dict)
    prefix_nodes: dict[tuple[PatternPlan, int], list[int]] = field(default_factory=dict)
    # feedrouter.plan.nodesets: unfiltered steps' node sets
    plain_down: dict[tuple[Step, ...], list[int]] = field(default_factory=dict)
    plain_fields: dict[tuple[tuple[Step, ...], int], list[int]] = field(default_factory=dict)
    # feedrouter.plan.search: branch outcomes per context node, and what gave up for node sets
    branch_held: dict[tuple[PathPattern, int], bool] = field(default_factory=dict)
    branch_holders: dict[PathPattern, BranchHolders] = field(default_factory=dict)
    searched_by_sets: set[PathPattern] = field(default_factory=set)  # return paths
    # feedrouter.join.witness: a join leaf's values and a fragment's bytes per node, shared by
    # every block that binds the node
    witness_values: dict[tuple[object, int], tuple[tuple[str, ...], int]] = field(default_factory=dict)
    witness_fragments: dict[tuple[object, str, int], bytes] = field(default_factory=dict)
    # feedrouter.plan.index: the keys found at each probe site (by the shared site's id)
    probe_keys: dict[int, set[str | float]] = field(default_factory=dict)
    # feedrouter.plan.shared_join: one join per signature
    shared_joins: dict[JoinSignature, SharedJoin] = field(default_factory=dict)
    # feedrouter.plan.evaluate: the children of a parent that pass a positional step, by (step, parent)
    survivors: dict[tuple[int, etree._Element | None], set[etree._Element]] = field(default_factory=dict)
    # DocumentContext.children_named: an element's children by name (join witnesses read them)
    children_named: dict[etree._Element, dict[str, list[etree._Element]]] = field(default_factory=dict)
    # DocumentContext.charge_children: the elements whose children were charged to the budget
    children_charged: set[etree._Element] = field(default_factory=set)
    # DocumentContext.small_stream: a path's tuples when they are few, else None
    small_streams: dict[int, list[PathTuple] | None] = field(default_factory=dict)


class DocumentContext:
    """Everything the post-processing of one document shares across subscriptions.

    ``caches`` holds results of shared operators for this document (:class:`PlanCaches`: key sets
    of branch plans, return-path groups, node sets...), so identical sub-plans run once;
    ``slot_bytes`` the serialized return slots per binding, which the message factory files.

    ``work`` counts the units of work the document has cost so far (a unit: one node or path-tuple
    an operator looked at); past ``max_work`` the document is refused with FR205, a
    :class:`~feedrouter.errors.DocumentError`, so that one hostile message cannot stall a task.
    """

    __slots__ = (
        "_ids",
        "_serialized",
        "_string_values",
        "_tagged",
        "bindings",
        "caches",
        "matches",
        "max_work",
        "members",
        "nodes",
        "outcomes",
        "profiler",
        "slot_bytes",
        "source",
        "work",
    )

    def __init__(
        self,
        matches: Matches,
        source: str | None = None,
        profiler: Profiler | None = None,
        *,
        max_work: int = DEFAULT_MAX_WORK,
        members: Mapping[ast.AbsPath, PatternPlan] | None = None,
    ) -> None:
        self.matches = matches
        # the plans of the forward paths backward steps became (feedrouter.plan.backward), by path
        self.members = members or {}
        self.max_work = max_work
        self.work = 0
        self.profiler = profiler
        self.nodes: Nodes = matches.nodes
        self.source = source
        self.caches = PlanCaches()
        self.slot_bytes: SlotBytes = {}  # (slot ref, binding) -> bytes: see feedrouter.output.view
        self.bindings: dict[object, list[int]] = {}  # main plan -> its bound nodes
        self.outcomes: dict[tuple[Checker, int], bool] = {}  # (local test's checker, node) -> passed
        self._ids: dict[etree._Element, int] | None = None
        self._string_values: dict[int, str] = {}
        self._serialized: dict[int, bytes] = {}
        self._tagged: dict[str, list[int]] | None = None

    def member_set(self, path: ast.AbsPath) -> set[int]:
        """The nodes an absolute path selects, from its shared plan's streams (built once per
        document): an x-dag join of :mod:`feedrouter.plan.backward`, with no look at the tree."""
        plan = self.members[path]
        return plan.key_set(self, plan.pattern.last)

    def upward(self, nid: int, steps: tuple[ast.UpStep, ...]) -> list[int]:
        """The nodes backward steps reach from ``nid``, in document order: each step walks the parent
        ids the run recorded (no look at the tree), keeps the names its test passes, then applies
        its predicates in order: node sets (``Member``) and positions, counted nearest first."""
        parents, tags = self.matches.parents, self.matches.tags
        current = [nid]
        for step in steps:
            tag = step.name.clark if step.name is not None else None
            found: set[int] = set()
            walked = 0
            for node in current:
                ups = _upward(parents, node, step.axis)
                walked += len(ups)
                reached = [up for up in ups if tag is None or tag_matches(tag, tags[up])]
                for test in step.filters:
                    reached = self._filtered(reached, test)
                found.update(reached)
            self.charge(len(current) + walked)  # an ancestor walk costs the depth it climbs
            current = sorted(found)
        return current

    def upward_holds(self, nid: int, test: ast.UpwardTest) -> bool:
        """Whether an :class:`~feedrouter.lang.ast.UpwardTest` holds on the node: some node its
        steps reach is among its ``below`` path's (any node, without one)."""
        upper = self.upward(nid, test.steps)
        if test.below is None:
            return bool(upper)
        kept = self.member_set(test.below.path)
        return any(n in kept for n in upper)

    def reached_set(self, test: ast.ReachedFrom) -> set[int]:
        """The nodes ``test``'s steps reach from any node of its source path, once per document."""
        cache = self.caches.reached
        found = cache.get(test)
        if found is None:
            found = cache[test] = set()
            for node in sorted(self.member_set(test.source.path)):
                found.update(self.upward(node, test.steps))
        return found

    def _filtered(self, nodes: list[int], test: ast.Member | ast.Position) -> list[int]:
        if isinstance(test, ast.Member):
            kept = self.member_set(test.path)
            return [n for n in nodes if n in kept]
        size = len(nodes)
        bound = size if test.index is None else test.index
        compare = evaluate.OPERATORS[test.op]
        return [n for position, n in enumerate(nodes, 1) if compare(position, bound)]

    def charge(self, units: int) -> None:
        """Add ``units`` to the document's work; FR205 once it passes the budget.

        Called once per operator run, set built or search step (never per tuple), so that the
        count costs little on ordinary documents.
        """
        self.work += units
        if self.work > self.max_work:
            raise self.over_budget()

    def over_budget(self) -> Exception:
        return error(
            "FR205",
            f"routing the document takes more than {self.max_work} units of work (nodes and path-tuples "
            "looked at by the subscriptions' operators); it is refused rather than left to stall the task",
            source=self.source,
        )

    def stream(self, pid: int) -> list[PathTuple]:
        """A path's path-tuples, charged to the work budget (their building stops past it)."""
        tuples = self.matches.stream_within(pid, self.max_work - self.work)
        if tuples is None:
            raise self.over_budget()
        self.charge(len(tuples))
        return tuples

    def small_stream(self, pid: int) -> list[PathTuple] | None:
        """A path's path-tuples if they are few (see :data:`TUPLES_PER_NODE`), else None; decided
        once per path and document, building at most that many tuples."""
        small = self.caches.small_streams
        if pid in small:
            return small[pid]
        limit = TUPLES_PER_NODE * len(self.matches.last_nodes(pid)) + TUPLES_SLACK
        tuples = self.matches.stream_within(pid, min(limit, self.max_work - self.work))
        if tuples is not None:
            self.charge(len(tuples))
        small[pid] = tuples
        return tuples

    def tagged(self, tag: str) -> list[int]:
        """The ids of the elements named ``tag`` (``*``: all), in document order."""
        if self._tagged is None:
            self._tagged = {}
            for nid, name in enumerate(self.matches.tags):
                members = self._tagged.get(name)
                if members is None:
                    self._tagged[name] = [nid]
                else:
                    members.append(nid)
            self._tagged["*"] = list(range(len(self.matches.tags)))
        found = self._tagged.get(tag)
        if found is None and is_namespace_wildcard(tag):
            names = [n for n in self._tagged if n != "*" and not is_namespace_wildcard(n)]
            names = [n for n in names if tag_matches(tag, n)]
            found = self._tagged[tag] = sorted(nid for name in names for nid in self._tagged[name])
        return found or []

    def id_of(self, element: etree._Element) -> int:
        if self._ids is None:
            # the proxies in self.nodes stay alive, so lxml hands back these same objects
            self._ids = {el: i for i, el in enumerate(self.nodes)}
        return self._ids[element]

    def string_value(self, nid: int) -> str:
        """The node's string value, once per document (libxml2 joins the subtree's text nodes)."""
        value = self._string_values.get(nid)
        if value is None:
            value = self._string_values[nid] = element_string(self.nodes[nid])
        return value

    def serialized(self, nid: int) -> bytes:
        """The node serialized as XML, at most once per document however many results hold it; -1
        is the document node (``//a/..`` on the root): its children, as XQuery serializes it."""
        data = self._serialized.get(nid)
        if data is None:
            if nid < 0:
                data = self._serialized[nid] = _document_content(self.nodes[0])
            else:
                data = etree.tostring(self.nodes[nid], encoding="utf-8", with_tail=False)
                self._serialized[nid] = data
        return data

    def outcome(self, check: Checker, nid: int) -> bool:
        """A local test's outcome on a node, run once per document for every plan that asks.

        Subscriptions repeat tests (few constants, many subscribers), and :func:`checker` interns
        one function per test, so equal tests share one entry.
        """
        passed = self.outcomes.get((check, nid))
        if passed is None:
            passed = self.outcomes[check, nid] = check(self, nid)
        return passed

    def passes(self, nid: int, tests: tuple[LocalTest, ...]) -> bool:
        return all(self.outcome(checker(test), nid) for test in tests)

    def children_named(self, element: etree._Element) -> dict[str, list[etree._Element]]:
        """An element's element children by name (Clark notation), in document order, once per
        document and element (each child a unit of work)."""
        known = self.caches.children_named
        found = known.get(element)
        if found is None:
            found = known[element] = {}
            for child in element:
                tag = child.tag
                if isinstance(tag, str):  # comments and processing instructions have functions
                    named = found.get(tag)
                    if named is None:
                        found[tag] = [child]
                    else:
                        named.append(child)
            self.charge_children(element)
        return found

    def charge_children(self, element: etree._Element) -> None:
        """Charge a walk over the element's children (a unit each) once per document, whoever
        walks them (:meth:`children_named`, the compiled witness-row kernel): the budget a
        document gets does not depend on which path read it."""
        charged = self.caches.children_charged
        if element not in charged:
            charged.add(element)
            self.charge(len(element))

    def children(self, nid: int, tag: str, descendants: bool) -> Iterator[int]:
        """Ids of the element children (or descendants) of a node named ``tag`` (``*``: any)."""
        element = self.nodes[nid]
        name = _ELEMENT if tag == "*" else tag
        found = element.iterdescendants(name) if descendants else element.iterchildren(name)
        for el in found:
            self.work += 1  # the caller (a search) checks the budget when it is done
            yield self.id_of(el)


Checker = Callable[[DocumentContext, int], bool]


def _document_content(root: etree._Element) -> bytes:
    """The document node's children serialized: the comments and processing instructions around the
    root element, and the root (no XML declaration, no document type declaration)."""
    before = [
        etree.tostring(n, encoding="utf-8", with_tail=False)
        for n in reversed(list(root.itersiblings(preceding=True)))
    ]
    after = [etree.tostring(n, encoding="utf-8", with_tail=False) for n in root.itersiblings()]
    return b"".join([*before, etree.tostring(root, encoding="utf-8", with_tail=False), *after])


def _upward(parents: Sequence[int], nid: int, axis: ast.Axis) -> list[int]:
    """The ids one backward step reaches from ``nid``, nearest first (-1, the document, left out)."""
    found = [nid] if axis is ast.Axis.ANCESTOR_OR_SELF else []
    up = parents[nid]
    while up >= 0:
        found.append(up)
        if axis not in (ast.Axis.ANCESTOR, ast.Axis.ANCESTOR_OR_SELF):
            break
        up = parents[up]
    return found


def _name_checker(test: ast.SelfTest) -> Checker:
    """``self::a`` on a node the NFA found: its name as the run recorded it, no look at the tree."""
    if test.name is None:
        return lambda ctx, nid: True
    clark = test.name.clark
    if is_namespace_wildcard(clark):
        return lambda ctx, nid: tag_matches(clark, ctx.matches.tags[nid])
    return lambda ctx, nid: ctx.matches.tags[nid] == clark


@lru_cache(maxsize=65536)
def checker(test: LocalTest) -> Checker:
    """Compile a local test once into a function of (context, node id)."""
    kind, attribute = test.kind, test.attribute
    if kind is TestKind.RESIDUAL:
        condition = test.condition
        assert condition is not None
        if isinstance(condition, ast.SelfTest):
            return _name_checker(condition)
        if isinstance(condition, ast.Member):
            path = condition.path
            return lambda ctx, nid: nid in ctx.member_set(path)
        if isinstance(condition, ast.UpwardTest):
            upward = condition
            return lambda ctx, nid: ctx.upward_holds(nid, upward)
        if isinstance(condition, ast.ReachedFrom):
            reached = condition
            return lambda ctx, nid: nid in ctx.reached_set(reached)
        if isinstance(condition, ast.Not) and isinstance(condition.operand, ast.Member):
            negated = condition.operand.path
            return lambda ctx, nid: nid not in ctx.member_set(negated)
        return lambda ctx, nid: evaluate.holds(ctx, ctx.nodes[nid], condition)
    if kind is TestKind.POSITION:
        step = test.step
        assert step is not None
        recorded = evaluate.recorded_survives(step)
        if recorded is not None:
            return recorded
        return lambda ctx, nid: evaluate.survives(ctx, ctx.nodes[nid], step)
    if kind is TestKind.ATTR_EXISTS:
        if is_attribute_wildcard(attribute):
            return lambda ctx, nid: bool(attribute_values(ctx.nodes[nid], attribute))
        return lambda ctx, nid: ctx.nodes[nid].get(attribute) is not None
    if kind is TestKind.TEXT_EXISTS:
        return lambda ctx, nid: any(True for _ in iter_text_nodes(ctx.nodes[nid]))
    assert test.op is not None and test.literal is not None
    holds = comparator(test.op, test.literal)
    if kind is TestKind.ATTR_CMP and is_attribute_wildcard(attribute):
        return lambda ctx, nid: any(holds(v) for v in attribute_values(ctx.nodes[nid], attribute))
    if kind is TestKind.ATTR_CMP:

        def attr_cmp(ctx: DocumentContext, nid: int) -> bool:
            value = ctx.nodes[nid].get(attribute)
            return value is not None and holds(value)

        return attr_cmp
    if kind is TestKind.TEXT_CMP:
        return lambda ctx, nid: any(holds(text) for _, text in iter_text_nodes(ctx.nodes[nid]))
    return lambda ctx, nid: holds(ctx.string_value(nid))
