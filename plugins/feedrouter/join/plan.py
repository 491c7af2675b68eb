"""A join subscription compiled for the two stages of paper 001 (Hong et al., SIGMOD 2007, §3-4).

Stage 1 is the shared router: each side of a join is a *block* (its stream binding and the where
conditions on that variable alone), compiled into the router of the feed it reads as a witness plan
(:class:`BlockSpec`): for every node the block binds it delivers the string values of the join's
*leaf paths* and the bytes of the return's *fragments*. Blocks are named by what they select, so
subscriptions with the same block share one witness plan, and the witness plan shares the NFA, the
selection index and whole plans with ordinary subscriptions.

Stage 2 (:mod:`feedrouter.join.stage`) joins the witnesses: a :class:`JoinPlan` says which blocks,
which leaf paths are compared, the temporal term, its reduced join graph's :class:`~feedrouter.join.
templates.Template` (the R_T row it contributes) and how a pair's result is assembled from the two
sides' fragments (:attr:`JoinPlan.code`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import cast

from feedrouter.join import templates
from feedrouter.lang import ast
from feedrouter.lang.printer import condition_text, to_xquery
from feedrouter.lang.windows import parse_window
from feedrouter.output.factory import (
    Op,
    Slot,
    SlotElement,
    Template,
    compile_constructor,
    compile_items,
    flatten,
    value_slots,
)

LEFT, RIGHT = 0, 1


def lookback(window: timedelta, lateness: timedelta) -> int:
    """How many hours before ``H`` a partner of a message of ``H`` can have arrived."""
    return math.ceil((window + lateness) / timedelta(hours=1))


@dataclass(frozen=True)
class Fragment:
    """A return slot's path from one side's bound node, rendered as the message factory renders
    it: node copies (in a constructor with default namespace ``default_ns``), or, for an attribute
    value template, the atomized values joined by spaces (``value``)."""

    path: ast.RelPath
    value: bool = False
    default_ns: str = ""

    @property
    def key(self) -> str:
        """The fragment's name in the witness relations (stable across plan builds)."""
        kind = "value" if self.value else "nodes"
        return f"{kind} {self.default_ns} {path_text(self.path)}"


@dataclass
class BlockSpec:
    """One block's witness plan: the nodes ``binding`` selects in documents of ``feed`` that pass
    ``where``, with the values of ``leaves`` and the bytes of ``fragments`` for each.

    Identical blocks of several subscriptions are one spec (its :attr:`id` is the digest of the
    block's canonical text), whose leaves and fragments are the union of theirs.
    """

    id: str
    feed: str
    binding: ast.AbsPath
    where: tuple[ast.Condition, ...]
    text: str
    leaves: dict[str, ast.RelPath] = field(default_factory=dict)
    fragments: dict[str, Fragment] = field(default_factory=dict)
    #: only the first node the binding selects, in document order, is read (an event time: a
    #: message's time is its first value; a bulk message's thousands of others cost nothing)
    first: bool = False

    def merge(self, other: BlockSpec) -> bool:
        """Take ``other``'s leaves and fragments (same block); whether anything was new."""
        before = len(self.leaves), len(self.fragments)
        for text, path in other.leaves.items():
            self.leaves.setdefault(text, path)
        for key, fragment in other.fragments.items():
            self.fragments.setdefault(key, fragment)
        return (len(self.leaves), len(self.fragments)) != before

    def subscription(self) -> ast.Subscription:
        """The block as the FLWR the router plans: its return is the leaves, then the fragments."""
        paths = [*self.leaves.values(), *(f.path for f in self.fragments.values())]
        ret: ast.Return = ast.Items(tuple(paths)) if len(paths) != 1 else paths[0]
        return ast.Subscription(ast.Flwr("w", self.binding, self.where, ret))

    def first_element(self) -> str | None:
        """The local name (no namespace) of the elements whose first one, in document order, this
        block reads the string value of, when that is all it does: ``//pubDate``, a feed's usual
        event time (the router reads it off the parsed tree: :func:`~feedrouter.join.witness.
        first_named_row`). None for any other block."""
        if not self.first or self.fragments or len(self.leaves) != 1:
            return None
        (leaf,) = self.leaves.values()
        if leaf.steps or leaf.tail is not None:
            return None
        return self.walked_element()

    def walked_element(self) -> str | None:
        """The local name (no namespace) of the elements this block binds when it binds every
        element of that name, or the first (``for $w in //item``, no conditions): its nodes can
        be found by one walk of the parsed tree (:class:`~feedrouter.join.witness.Walked`). None
        for any other binding, or with conditions."""
        steps = self.binding.steps
        if self.where or self.binding.tail is not None or len(steps) != 1:
            return None
        step = steps[0]
        if step.axis is not ast.Axis.DESCENDANT or step.predicates or step.name is None:
            return None
        if step.name.uri or step.name.local == ast.ANY:
            return None
        return step.name.local

    def value_slots(self) -> frozenset[int]:
        """The return slots planned as attribute value templates (value fragments)."""
        first = len(self.leaves)
        return frozenset(first + i for i, f in enumerate(self.fragments.values()) if f.value)


@dataclass(frozen=True)
class Use:
    """A slot of a join's return: fragment ``key`` of the pair's ``side`` node."""

    side: int
    key: str


Code = bytes | Use | SlotElement[Use]


@dataclass
class JoinPlan:
    """A join subscription ready for stage 2.

    Attributes:
        sid: the subscription id.
        feed: the subscription's own feed (``fr:stream()``).
        blocks: the left and right :class:`BlockSpec` ids.
        feeds: the feeds the two blocks read.
        joins: per value join, the left and right leaf path texts.
        template, bindings: the reduced join graph's template and this subscription's row of it.
        kind, window: the temporal term; ``left_first``: its first variable is the left binding.
        code: the return, flattened, its slots naming a side's fragment.
        lateness: the longest allowed lateness of the feeds it reads (a partner may have arrived
            that much later than its event time); None: the join stage's.
    """

    sid: str
    feed: str
    blocks: tuple[str, str]
    feeds: tuple[str, str]
    joins: tuple[tuple[str, str], ...]
    template: templates.Template
    bindings: tuple[str, ...]
    kind: ast.TemporalKind
    window: timedelta
    left_first: bool
    code: tuple[Code, ...]
    notes: list[str] = field(default_factory=list)
    lateness: timedelta | None = None
    #: per side, the names of the leaves and fragments this subscription reads of its block (the
    #: block's spec holds every subscription's): what an hour must hold for it alone (a later
    #: join may add to a shared block what an hour routed before it lacks); () in plans compiled
    #: before it was recorded, which need their blocks' every leaf and fragment
    needs: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def reach(self, lateness: timedelta) -> int:
        """How many hours back a partner of a message of this hour can have arrived: the window
        plus the lateness (``lateness`` when the plan has none of its own)."""
        return lookback(self.window, lateness if self.lateness is None else self.lateness)

    @property
    def key(self) -> tuple[object, ...]:
        """What the pairs depend on: subscriptions with one key share their join's work."""
        return (self.blocks, self.joins, self.kind, self.window, self.left_first)

    def reduced_graph(self) -> str:
        """The reduced join graph with its labels: each tree's edges, then the value edges."""
        paths = self.template.paths(self.bindings)
        labels = dict(zip(self.template.variables, self.bindings, strict=True))
        tree = " ".join(
            f"{parent}-{labels[var]}->{var}"
            for var, parent in zip(self.template.variables, self.template.parents, strict=True)
        )
        values = " ".join(f"{paths[a]}={paths[b]}" for a, b in self.template.value_edges)
        return f"{tree} | {values}"

    def describe(self, specs: dict[str, BlockSpec]) -> str:
        """A readable account for ``explain()``: blocks, reduced graph, template, temporal term."""
        left, right = (specs[b] for b in self.blocks)
        joins = " and ".join(f"left {a} = right {b}" for a, b in self.joins)
        lines = [
            f"join subscription {self.sid} (paper 001: witnesses, then one query per template)",
            f"  left block {left.id} on feed {left.feed}: {left.text}",
            f"  right block {right.id} on feed {right.feed}: {right.text}",
            f"  value joins: {joins}",
            f"  reduced join graph: {self.reduced_graph()}",
            f"  {self.template.describe()} ({self.template.key})",
            f"  R_T row: {self.bindings} window {self.window}",
            f"  temporal: {self.kind.value}, {'left' if self.left_first else 'right'} first, {self.window}",
        ]
        return "\n".join(lines + [f"  {note}" for note in self.notes])


def compile_join(
    sid: str, sub: ast.Subscription, own_feed: str
) -> tuple[JoinPlan, tuple[BlockSpec, BlockSpec]]:
    """Compile a parsed join subscription of feed ``own_feed``: its plan and its two blocks' specs."""
    body = sub.body
    if not isinstance(body, ast.JoinFlwr):
        raise TypeError(f"subscription {sid} is not a join")
    sides = (body.left, body.right)
    specs = tuple(_block(side, own_feed) for side in sides)
    joins = tuple((_leaf(specs[LEFT], j.left), _leaf(specs[RIGHT], j.right)) for j in body.joins)
    code = _return_code(body, specs)
    leaves = [
        templates.ValueJoin(
            templates.LeafPath(templates.Side.LEFT, a, _single(j.left)),
            templates.LeafPath(templates.Side.RIGHT, b, _single(j.right)),
        )
        for (a, b), j in zip(joins, body.joins, strict=True)
    ]
    template, bindings = templates.classify(leaves)
    temporal = body.temporal
    plan = JoinPlan(
        sid=sid,
        feed=own_feed,
        blocks=(specs[LEFT].id, specs[RIGHT].id),
        feeds=(specs[LEFT].feed, specs[RIGHT].feed),
        joins=joins,
        template=template,
        bindings=bindings,
        kind=temporal.kind,
        window=parse_window(temporal.window),
        left_first=temporal.first == body.left.var,
        code=code,
        needs=tuple((tuple(sorted(spec.leaves)), tuple(sorted(spec.fragments))) for spec in specs),
    )
    return plan, (specs[LEFT], specs[RIGHT])


def path_text(path: ast.RelPath) -> str:
    """A relative path's canonical text (``author``, ``@id``, ``info/title``, ``.``): the names of
    leaves and fragments in the witness relations. Names are written ``Q{uri}local`` (no prefix),
    so texts do not depend on the prefixes a subscription chose."""
    text = condition_text(ast.Exists(replace(path, var="", span=None)))
    return text or "."


def _block(side: ast.StreamBinding, own_feed: str) -> BlockSpec:
    return block_spec(side.feed or own_feed, side.path, tuple(_unbound(c) for c in side.where))


def block_spec(feed: str, binding: ast.AbsPath, where: tuple[ast.Condition, ...]) -> BlockSpec:
    """The block of ``feed`` that ``binding`` and ``where`` (variables dropped) select, named by the
    digest of its canonical text: equal blocks of any subscriptions get one id."""
    flwr = ast.Flwr("w", binding, where, ast.RelPath())
    # one line: a line break of the printed text is its layout's (a string literal's is printed
    # as a reference, so literals differing in a line break and a space stay apart); the ids are
    # those of hours written before, which need no back-fill
    text = to_xquery(ast.Subscription(flwr)).replace("\n", " ")
    digest = hashlib.sha256(f"{feed}\n{text}".encode()).hexdigest()[:20]
    return BlockSpec(f"block-{digest}", feed, binding, where, text)


def _unbound(condition: ast.Condition) -> ast.Condition:
    """A where condition of one side with its paths' variable names dropped: a block is the same
    whatever its variable is called."""
    return cast(ast.Condition, _strip_vars(condition))


def _strip_vars(node: object) -> object:
    if isinstance(node, ast.RelPath):
        return replace(node, var="")
    if isinstance(node, tuple):
        return tuple(_strip_vars(item) for item in node)
    fields = getattr(node, "__dataclass_fields__", None)
    if fields is None or isinstance(node, ast.Step):
        return node
    changes = {f: _strip_vars(getattr(node, f)) for f in fields if f != "span"}
    return replace(node, **changes)  # type: ignore[type-var]


def _leaf(spec: BlockSpec, path: ast.RelPath) -> str:
    text = path_text(path)
    spec.leaves.setdefault(text, replace(path, var=""))
    return text


def _single(path: ast.RelPath) -> bool:
    """Whether the path selects at most one node per bound node, which lets comparisons share its
    node in the join graph: a named attribute of the bound node itself (``@*`` may be several).
    (Element paths would need the DTD's occurrence bounds; without them each comparison keeps its
    own leaf, which is exact.)"""
    tail = path.tail
    return (
        not path.steps
        and isinstance(tail, ast.AttributeTest)
        and ast.ANY not in (tail.name.uri, tail.name.local)
    )


def _return_code(body: ast.JoinFlwr, specs: tuple[BlockSpec, ...]) -> tuple[Code, ...]:
    """The return flattened as the message factory does, each slot resolved to a fragment of the
    side its path starts from (filed in that side's block)."""
    slots: list[ast.RelPath] = []
    template: Template
    if isinstance(body.ret, ast.Constructor):
        template = compile_constructor(body.ret, slots)
    elif isinstance(body.ret, ast.Items):
        template = compile_items(body.ret, slots)
    else:
        slots.append(body.ret)
        template = Slot(0)
    values = value_slots(template)
    sides = {body.left.var: LEFT, body.right.var: RIGHT}

    def use(slot: Slot) -> Use:
        path = slots[slot.index]
        side = sides[path.var]
        fragment = Fragment(replace(path, var=""), slot.index in values, slot.default_ns)
        specs[side].fragments.setdefault(fragment.key, fragment)
        return Use(side, fragment.key)

    return tuple(_resolved(op, use) for op in flatten(template))


def _resolved(op: Op, use: Callable[[Slot], Use]) -> Code:
    if isinstance(op, bytes):
        return op
    if isinstance(op, Slot):
        return use(op)
    return SlotElement(op.start, op.end, op.empty, tuple(use(s) for s in op.slots))


class JoinSet:
    """The join subscriptions of a plan build: their plans, and their blocks merged by id (one
    witness plan per distinct block, whatever subscriptions and feeds use it)."""

    def __init__(self) -> None:
        self.plans: dict[str, JoinPlan] = {}
        self.specs: dict[str, BlockSpec] = {}

    def add(self, sid: str, sub: ast.Subscription, own_feed: str) -> JoinPlan:
        """Compile one join subscription of ``own_feed`` and file its blocks."""
        plan, specs = compile_join(sid, sub, own_feed)
        for spec in specs:
            known = self.specs.setdefault(spec.id, spec)
            if known is not spec:
                known.merge(spec)
        self.plans[sid] = plan
        return plan

    def specs_for(self, feed: str) -> list[BlockSpec]:
        """The blocks the router of ``feed`` computes witnesses for (blocks reading ``feed``)."""
        return [spec for spec in self.specs.values() if spec.feed == feed]

    def plans_of(self, feed: str) -> list[JoinPlan]:
        """The join subscriptions of ``feed`` (its own, the ones delivered with its hours)."""
        return [plan for plan in self.plans.values() if plan.feed == feed]


def clock_block(feed: str, path: str) -> BlockSpec:
    """The block that reads a feed's event time in the same pass: the first value the event-time
    path selects, in document order (``//pubDate``: the first such element's string value;
    ``/trade/@executed``: the attribute of the first ``trade`` that has one; ``//time/text()``: the
    text of the first ``time`` that has text), its one leaf, the message's time its first value.

    Raises:
        SubscriptionError: the path is not an absolute path to elements, their text or one
            attribute of them that the router reads (the catalog refuses such a path at build:
            :func:`~feedrouter.catalog.validation.event_time_path_problem`).
    """
    from feedrouter.lang import parse  # the parser imports this package's users' modules lazily

    elements, tail = _clock_parts(path)
    # the first element that has the value (an empty <time/> or a <trade> without the attribute
    # comes first in many documents, and has no value to take), or the first element
    has = (
        ""
        if tail is None
        else "[@" + tail.name.local + "]"
        if isinstance(tail, ast.AttributeTest)
        else "[text()]"
    )
    body = parse(elements + has).body
    if not isinstance(body, ast.Filter) or not isinstance(body.path, ast.AbsPath) or body.path.tail:
        raise TypeError(f"the event-time path {path!r} must select elements, their text or one attribute")
    leaf = ast.RelPath((), tail)  # the element's string value, its text nodes, or the attribute
    binding = ast.AbsPath(body.path.steps, body.path.span)
    text = f"event time of {feed}: {path}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    spec = BlockSpec(f"clock-{digest}", feed, binding, (), text, first=True)
    spec.leaves[path_text(leaf)] = leaf
    return spec


#: an event-time path's last step when it is an attribute (``/@name``, ``/attribute::name``) or
#: ``/text()``, read off the path with its string literals blanked (a predicate's may hold ``/@``)
_CLOCK_ATTRIBUTE = re.compile(r"\s*/\s*(?:@|attribute\s*::)\s*([A-Za-z_][\w.\-]*)\s*$")
_CLOCK_TEXT = re.compile(r"\s*/\s*text\s*\(\s*\)\s*$")
_LITERAL = re.compile(r"\"[^\"]*\"|'[^']*'")


def _clock_parts(path: str) -> tuple[str, ast.Tail | None]:
    """An event-time path as the path to its elements and what it reads of them: an attribute,
    their text, or (None) their string value."""
    from feedrouter.errors import SubscriptionError

    blanked = _LITERAL.sub(lambda found: found.group(0)[0] * len(found.group(0)), path)
    attribute, text = _CLOCK_ATTRIBUTE.search(blanked), _CLOCK_TEXT.search(blanked)
    last = attribute or text
    elements = path if last is None else path[: last.start()].rstrip()
    if not elements.strip() or elements.rstrip().endswith("/"):
        raise SubscriptionError(
            f"the event-time path {path!r} reads the attributes or text of every element below a node "
            "(//@name, //text()): name the element that holds the time, e.g. //item/@date or //date/text()"
        )
    if attribute is not None:
        return elements, ast.AttributeTest(ast.QName("", attribute.group(1)))
    return elements, None if text is None else ast.TextTest()
