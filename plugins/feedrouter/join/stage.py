"""Stage 2 of paper 001: join an hour's witnesses with the window's, for every join subscription.

A pair ``(l, r)`` of a subscription (``l`` bound by its left block, ``r`` by its right) qualifies
when every value join holds (some value of ``l``'s leaf equals some value of ``r``'s: XQuery's
general comparison) and the temporal term holds on the two messages' event times. It is delivered
in the hour of its later-arriving message, so that every pair is delivered exactly once, whatever
order the hours are routed in: stage 2 of hour ``H`` takes the pairs with one node from ``H`` and
the other from ``H`` or the hours before it within the window plus the allowed lateness.

Shared work (paper 001): subscriptions with the same blocks and value joins share their candidate
pairs, computed once per hour from the value index of their most selective join (the hour's view
cache, leaf and value to nodes: a value semi-join before anything else, Algorithm 4), the other
joins checked on those candidates only; subscriptions that differ only in their temporal term share
those candidates, and a pair finds the windows it satisfies by bisection. A subscription's result
for the hour is one item per pair, in XQuery's order (the first binding's stream and document
order, then the second's), assembled from the fragments stage 1 rendered.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial

from feedrouter import heap
from feedrouter.join.plan import LEFT, BlockSpec, Code, JoinPlan, Use
from feedrouter.join.relations import ONE_HOUR, HourWitnesses
from feedrouter.lang.ast import TemporalKind
from feedrouter.output.factory import SlotElement

#: A node of the window: (hour, message number in its hour, element id); ordered as XQuery orders
#: a stream's nodes (stream order of messages, then document order).
NodeRef = tuple[datetime, int, int]
Pair = tuple[NodeRef, NodeRef]
#: How stage 2 reads a feed's hour of witnesses: None when the hour has none (yet).
WitnessStore = Callable[[str, datetime], "HourWitnesses | None"]

DEFAULT_MAX_PAIRS = 100_000
_NONE: frozenset[str] = frozenset()
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
#: Matches enumerated between two checks whether a slice's subscriptions are all past their cap.
_FULL_CHECK = 4096
#: Matches enumerated between two trims of a slice's pair lists to the cap (a multiple of
#: :data:`_FULL_CHECK`): a list holds at most this many pairs past it (one per match), instead of
#: every append checking its length.
_TRIM = 65536


@dataclass
class JoinDelivery:
    """What one join subscription gets for one hour: one result per qualifying pair, in order, or
    nothing with ``withheld`` saying why (more pairs than the per-subscription cap)."""

    sid: str
    hour: datetime
    results: list[bytes] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)  # each result's two nodes: its provenance
    count: int = 0  # the qualifying pairs, delivered or withheld
    withheld: str | None = None


class JoinStage:
    """Stage 2 over a set of compiled join subscriptions (one plan build's)."""

    def __init__(
        self,
        plans: Iterable[JoinPlan],
        specs: Mapping[str, BlockSpec],
        *,
        lateness: timedelta = ONE_HOUR,
        max_pairs: int = DEFAULT_MAX_PAIRS,
    ) -> None:
        self.plans = list(plans)
        self.specs = dict(specs)
        self.lateness = lateness
        self.max_pairs = max_pairs

    def run(self, hour: datetime, store: WitnessStore) -> dict[str, JoinDelivery]:
        """Every subscription's delivery for ``hour`` (also those with no pair: an empty delivery)."""
        return self.deliver(hour, store, self.pairs(hour, store))

    def pairs(self, hour: datetime, store: WitnessStore) -> dict[str, list[Pair]]:
        """Every subscription's qualifying pairs delivered in ``hour``, in XQuery's order; past the
        cap, only its first ``max_pairs + 1`` (the subscription is withheld: low-cardinality joins can
        give 10⁸ pairs, which are never held).

        Set-oriented, as paper 001's one query per template: for each value slice (the feeds and the
        leaf paths of a driving value join, :meth:`_Window.driving`) the matching node pairs are
        enumerated once, from the two sides' value indexes, and each is handed to the subscriptions
        whose blocks bound both nodes; the work follows the matches, not the number of subscriptions.
        """
        with heap.paused():  # millions of small objects, none of them garbage: no full collections
            return self._pairs(hour, store)

    def _pairs(self, hour: datetime, store: WitnessStore) -> dict[str, list[Pair]]:
        window = _Window(hour, store)
        hours = window.hours(max((plan.reach(self.lateness) for plan in self.plans), default=0))
        groups = _grouped(self.plans, lambda p: (p.blocks, p.joins))
        sames = [_grouped(group, lambda p: p.key) for group in groups]
        kept: list[list[list[Pair]]] = [[[] for _ in same] for same in sames]
        targets = [_Temporal.of(same).target(lists) for same, lists in zip(sames, kept, strict=True)]
        slices: dict[tuple[tuple[str, str], tuple[str, str]], dict[tuple[str, str], list[int]]] = {}
        # each group's value joins besides the driving one, numbered (0: none) so that a pair
        # checks each such conjunction once, whatever number of groups share it
        rest_ids: dict[tuple[tuple[str, str], ...], int] = {(): 0}
        rests: list[int] = []
        for number, group in enumerate(groups):
            plan = group[0]
            drive = window.driving(plan.feeds, plan.joins)
            others = tuple(join for join in plan.joins if join != drive)
            rests.append(rest_ids.setdefault(others, len(rest_ids)))
            slices.setdefault((plan.feeds, drive), {}).setdefault(plan.blocks, []).append(number)
        rest_joins = list(rest_ids)
        for (feeds, leaves), by_blocks in slices.items():
            by_left: dict[str, dict[str, _Route]] = {}
            for (left_block, right_block), numbers in by_blocks.items():
                by_left.setdefault(left_block, {})[right_block] = _by_rest(numbers, rests, targets)
            rights = frozenset(right for _, right in by_blocks)
            numbers = [n for ns in by_blocks.values() for n in ns]
            lists = [pairs for n in numbers for pairs in kept[n]]
            _join_slice(
                window.matches(feeds, leaves, hours, (frozenset(by_left), rights)),
                feeds[0] == feeds[1],
                by_left,
                rest_joins,
                partial(self._all_past_cap, lists),
                partial(self._trim, lists),
            )
            self._trim(lists)
        found: dict[str, list[Pair]] = {}
        for same, lists in zip(sames, kept, strict=True):
            for plans, pairs in zip(same, lists, strict=True):  # in order: see _Window.matches
                found.update((plan.sid, pairs) for plan in plans)
        return found

    def _all_past_cap(self, lists: list[list[Pair]]) -> bool:
        return all(len(pairs) > self.max_pairs for pairs in lists)

    def _trim(self, lists: list[list[Pair]]) -> None:
        """Cut each list to its first ``max_pairs + 1`` pairs (enough to say it is past the cap)."""
        kept = self.max_pairs + 1
        for pairs in lists:
            if len(pairs) > kept:
                del pairs[kept:]

    def deliver(
        self, hour: datetime, store: WitnessStore, pairs: Mapping[str, list[Pair]]
    ) -> dict[str, JoinDelivery]:
        """Each subscription's delivery of its ``pairs`` (another engine's, e.g. Spark SQL's):
        the results assembled from the fragments, or withheld past the cap."""
        window = _Window(hour, store)
        return {plan.sid: self._deliver(plan, sorted(pairs.get(plan.sid, ())), window) for plan in self.plans}

    def _deliver(self, plan: JoinPlan, pairs: list[Pair], window: _Window) -> JoinDelivery:
        delivery = JoinDelivery(plan.sid, window.hour, count=len(pairs))
        if len(pairs) > self.max_pairs:
            delivery.withheld = (
                f"[FR313] more than {self.max_pairs} pairs in the hour (the cap per subscription); "
                "make the join more selective"
            )
            return delivery
        delivery.results = [assemble(plan.code, window.fragments(plan.feeds, pair)) for pair in pairs]
        delivery.pairs = pairs
        return delivery


class _Window:
    """The witness hours one run of stage 2 reads, each loaded once."""

    def __init__(self, hour: datetime, store: WitnessStore) -> None:
        self.hour = hour
        self._store = store
        self._loaded: dict[tuple[str, datetime], HourWitnesses | None] = {}
        self._estimates: dict[tuple[tuple[str, str], tuple[str, str]], int] = {}

    def hours(self, back: int) -> list[datetime]:
        return [self.hour - ONE_HOUR * k for k in range(back, -1, -1)]

    def witnesses(self, feed: str, hour: datetime) -> HourWitnesses | None:
        key = (feed, hour)
        if key not in self._loaded:
            self._loaded[key] = self._store(feed, hour)
        return self._loaded[key]

    def driving(self, feeds: tuple[str, str], joins: tuple[tuple[str, str], ...]) -> tuple[str, str]:
        """The value join to enumerate a group's candidates from: the one with the fewest matches
        among this hour's own nodes (paper 001 runs the most selective semi-join first). Joining
        on ``@lang`` first would pair each message with a quarter of the window; on a link, with a
        few. The others are checked on its matches. The first of equals, so the choice (and only the
        work, never the pairs) is the same on every run over the same witnesses."""
        if len(joins) == 1:
            return joins[0]
        return min(joins, key=lambda join: self.matches_in_hour(feeds, join))

    def matches_in_hour(self, feeds: tuple[str, str], join: tuple[str, str]) -> int:
        """How many node pairs of this hour share a value of the join's leaves (a cost estimate)."""
        key = (feeds, join)
        found = self._estimates.get(key)
        if found is None:
            left, right = self.witnesses(feeds[LEFT], self.hour), self.witnesses(feeds[1], self.hour)
            found = 0
            if left is not None and right is not None:
                ours, theirs = left.value_index(join[0]), right.value_index(join[1])
                found = sum(len(ours[value]) * len(theirs[value]) for value in ours.keys() & theirs.keys())
            self._estimates[key] = found
        return found

    def matches(
        self,
        feeds: tuple[str, str],
        leaves: tuple[str, str],
        hours: Sequence[datetime],
        blocks: tuple[frozenset[str], frozenset[str]],
    ) -> Iterator[tuple[_Node, _Node]]:
        """The node pairs whose leaves share a value, one of them of this hour, each side bound by
        one of ``blocks`` (the slice's; other nodes serve none of its subscriptions): the value
        semi-join of the two sides from the hours' value indexes, each pair once.

        In XQuery's order (left node, then right node, each in stream and document order): the left
        nodes in order, each probing the right side's value index hour by hour, whose node lists are
        in order already. Every pair list of a slice's subscriptions is then filled in order, and
        none is sorted afterwards (sorting them cost more than finding the pairs on dense
        populations: tuples of datetimes compared hundreds of millions of times)."""
        sides = (
            _Side(self, feeds[LEFT], leaves[LEFT], blocks[LEFT]),
            _Side(self, feeds[1], leaves[1], blocks[1]),
        )
        right = sides[1]
        for left_hour in hours:
            left_index = sides[LEFT].index(left_hour)
            if not left_index:
                continue
            probes = [
                (right_hour, index)
                for right_hour in (hours if left_hour == self.hour else [self.hour])
                if (index := right.index(right_hour))
            ]
            shared = set().union(*(left_index.keys() & index.keys() for _, index in probes))
            for node in sides[LEFT].ordered(left_hour, shared):
                values = node.values
                if len(values) == 1:
                    value = values[0]
                    for right_hour, index in probes:
                        ids = index.get(value)
                        if ids is not None:
                            for partner in right.nodes(right_hour, value, ids):
                                yield node, partner
                else:
                    for right_hour, index in probes:
                        yield from _partners_of_many(node, right, right_hour, index)

    def fragments(
        self, feeds: tuple[str, str], pair: Pair
    ) -> tuple[Mapping[str, bytes], Mapping[str, bytes]]:
        sides = []
        for feed, node in zip(feeds, pair, strict=True):
            hw = self.witnesses(feed, node[0])
            sides.append(hw.fragments.get(node[1:], {}) if hw is not None else {})
        return sides[0], sides[1]


#: The temporal variants of one group of one kind and orientation, as the pair loop reads them:
#: (FOLLOWED BY?, left binding first?, their windows ascending in microseconds, their pair lists in
#: that order): the variants a pair satisfies are those from a bisection on.
_Bucket = tuple[bool, bool, tuple[int, ...], tuple[list[Pair], ...]]
#: One group a pair can serve: its buckets.
_Target = tuple[_Bucket, ...]
#: The groups a pair of two nodes' block sets serves, by the other value joins they must check
#: (each conjunction's number, 0: none; one may come more than once, from different block pairs,
#: and is checked once per pair), with their buckets.
_Route = list[tuple[int, list[_Bucket]]]
#: The most routes (pairs of block sets) and left block sets' partners a slice keeps: where nodes'
#: block sets are nearly all different (thousands of blocks over one binding path), a route is
#: rarely met twice, and a left node's pairs come one after another (:meth:`_Window.matches`).
_ROUTES = 65536
_PARTNERS = 1024


def _join_slice(
    matches: Iterable[tuple[_Node, _Node]],
    same_feed: bool,
    by_left: Mapping[str, Mapping[str, _Route]],
    rest_joins: Sequence[tuple[tuple[str, str], ...]],
    all_capped: Callable[[], bool],
    trim: Callable[[], None],
) -> None:
    """Hand each matched pair of a value slice to the groups whose blocks bound both nodes, whose
    other value joins hold for it and whose temporal variants it satisfies (appended to their
    pair lists, which ``trim`` cuts to the cap every :data:`_TRIM` matches)."""
    # the groups a pair serves depend on its two nodes' block sets only: found once per
    # combination (nodes' sets are interned per side, so the look-up compares identities), from
    # the left set's partners by right block, found once per left set
    routes: dict[tuple[frozenset[str], frozenset[str]], _Route] = {}
    partners: dict[frozenset[str], dict[str, _Route]] = {}
    for seen, (ours, theirs) in enumerate(matches):
        if seen % _FULL_CHECK == 0:
            if seen % _TRIM == 0:
                trim()
            if all_capped():
                return  # a low-cardinality slice whose every subscription is withheld: stop
        route = routes.get((ours.blocks, theirs.blocks))
        if route is None:
            by_right = partners.get(ours.blocks)
            if by_right is None:
                if len(partners) >= _PARTNERS:
                    partners.clear()
                by_right = partners[ours.blocks] = _partners(by_left, ours.blocks)
            if len(routes) >= _ROUTES:
                routes.clear()
            route = routes[(ours.blocks, theirs.blocks)] = _route(by_right, theirs.blocks)
        if not route:
            continue
        pair = (ours.ref, theirs.ref)
        gap = theirs.time - ours.time
        same_message: bool | None = None if same_feed else False
        checked: dict[int, bool] | None = None  # each conjunction once per pair
        joined: dict[tuple[str, str], bool]  # each value join once per pair
        for rest, buckets in route:
            if rest:
                if checked is None:
                    checked, joined = {}, {}
                holds = checked.get(rest)
                if holds is None:
                    holds = checked[rest] = _rest_hold(ours, theirs, rest_joins[rest], joined)
                if not holds:
                    continue
            for followed_by, left_first, spans, lists in buckets:
                ahead = gap if left_first else -gap
                if followed_by:
                    if ahead <= 0:
                        continue
                else:
                    if same_message is None:
                        same_message = ours.ref[:2] == theirs.ref[:2]
                    if same_message:
                        continue
                    if ahead < 0:
                        ahead = -ahead
                if ahead > spans[-1]:  # outside the widest window
                    continue
                if len(lists) == 1:
                    lists[0].append(pair)
                else:
                    for pairs in lists[bisect_left(spans, ahead) :]:
                        pairs.append(pair)


def _by_rest(numbers: Iterable[int], rests: Sequence[int], targets: Sequence[_Target]) -> _Route:
    """Groups of one pair of blocks by their other value joins."""
    by_rest: dict[int, list[_Bucket]] = {}
    for number in numbers:
        by_rest.setdefault(rests[number], []).extend(targets[number])
    return list(by_rest.items())


def _partners(by_left: Mapping[str, Mapping[str, _Route]], lefts: frozenset[str]) -> dict[str, _Route]:
    """The groups of a slice whose left block is one of ``lefts`` (a left node's block set), by
    their right block."""
    found: dict[str, _Route] = {}
    for left_block in lefts & by_left.keys():
        for right_block, route in by_left[left_block].items():
            known = found.get(right_block)
            if known is None:
                found[right_block] = route[:]  # extended below: by_left's own lists stay as they are
            else:
                known += route
    return found


def _route(by_right: Mapping[str, _Route], rights: frozenset[str]) -> _Route:
    """The groups of a left node's partners (:func:`_partners`) whose right block is one of
    ``rights`` (a right node's block set). A pair list is in one group: it is found once; the order
    the groups are met in does not matter (each list gets at most this one pair)."""
    route: _Route = []
    if len(rights) < len(by_right):
        for right_block in rights:
            found = by_right.get(right_block)
            if found is not None:
                route += found
    else:
        for right_block, found in by_right.items():
            if right_block in rights:
                route += found
    return route


def _rest_hold(
    ours: _Node, theirs: _Node, rest: tuple[tuple[str, str], ...], checked: dict[tuple[str, str], bool]
) -> bool:
    """Whether a group's value joins besides the driving one hold for the pair (XQuery's general
    comparison: some value equal), each join checked once per pair whatever groups share it."""
    for join in rest:
        holds = checked.get(join)
        if holds is None:
            mine = ours.leaves.get(join[0], ())
            holds = checked[join] = bool(mine) and not set(mine).isdisjoint(theirs.leaves.get(join[1], ()))
        if not holds:
            return False
    return True


def _partners_of_many(
    node: _Node, right: _Side, hour: datetime, index: Mapping[str, list[tuple[int, int]]]
) -> Iterator[tuple[_Node, _Node]]:
    """The pairs of a left node with more than one value (two categories) and one right hour: the
    partners of each of its values, each once, in stream order."""
    partners: dict[tuple[int, int], _Node] = {}
    for value in dict.fromkeys(node.values):
        ids = index.get(value)
        if ids is not None:
            for partner in right.nodes(hour, value, ids):
                partners.setdefault(partner.ref[1:], partner)
    for key in sorted(partners):
        yield node, partners[key]


@dataclass(frozen=True)
class _Node:
    """A node on one side of a value slice: its reference, the blocks of the slice that bound it,
    its message's event time, its values of the slice's leaf and of every leaf."""

    ref: NodeRef
    blocks: frozenset[str]
    time: int  # microseconds since the epoch: a pair's gap is one integer subtraction
    values: tuple[str, ...]
    leaves: Mapping[str, tuple[str, ...]]


class _Side:
    """One side of a value slice (a feed, a leaf, the slice's blocks on that side) over the window:
    per hour and value, the nodes that can serve the slice, each made once."""

    def __init__(self, window: _Window, feed: str, leaf: str, blocks: frozenset[str]) -> None:
        self.window, self.feed, self.leaf, self.blocks = window, feed, leaf, blocks
        self._nodes: dict[tuple[datetime, str], list[_Node]] = {}
        self._sets: dict[frozenset[str], frozenset[str]] = {}  # equal block sets: one object

    def index(self, hour: datetime) -> dict[str, list[tuple[int, int]]]:
        hw = self.window.witnesses(self.feed, hour)
        return hw.value_index(self.leaf) if hw is not None else {}

    def nodes(self, hour: datetime, value: str, ids: list[tuple[int, int]]) -> list[_Node]:
        """The nodes of ``ids`` (the hour's value index's for ``value``) that serve the slice."""
        key = (hour, value)
        found = self._nodes.get(key)
        if found is None:
            found = self._nodes[key] = self._made(hour, ids)
        return found

    def ordered(self, hour: datetime, values: Iterable[str]) -> list[_Node]:
        """The hour's nodes that serve the slice and have one of ``values``, in stream order."""
        index = self.index(hour)
        return self._made(hour, sorted({node for value in values for node in index[value]}))

    def _made(self, hour: datetime, ids: Iterable[tuple[int, int]]) -> list[_Node]:
        hw = self.window.witnesses(self.feed, hour)
        assert hw is not None  # the caller found the nodes there
        members, found = hw.memberships(), []
        for node in ids:
            mine = members.get(node, _NONE) & self.blocks  # untimed nodes have no memberships
            if mine:
                time = hw.messages[node[0]].time
                assert time is not None
                leaves = hw.values[node]
                mine = self._sets.setdefault(mine, mine)
                micros = (time - _EPOCH) // _MICROSECOND
                found.append(_Node((hour, *node), mine, micros, leaves.get(self.leaf, ()), leaves))
        return found


@dataclass(frozen=True)
class _Temporal:
    """The temporal variants of one (blocks, joins) group: for each kind and orientation, their
    windows in ascending order, so that the variants a pair's gap satisfies are one bisection away
    (subscriptions that differ only in their window share everything else; a hundred windows cost
    one look-up per pair, not a hundred checks)."""

    #: (kind, left binding first, windows ascending in microseconds, the variants' numbers in that order)
    buckets: tuple[tuple[TemporalKind, bool, tuple[int, ...], tuple[int, ...]], ...]

    @classmethod
    def of(cls, variants: Sequence[Sequence[JoinPlan]]) -> _Temporal:
        by_kind: dict[tuple[TemporalKind, bool], list[tuple[int, int]]] = {}
        for number, plans in enumerate(variants):
            plan = plans[0]
            window = plan.window // _MICROSECOND
            by_kind.setdefault((plan.kind, plan.left_first), []).append((window, number))
        buckets = []
        for (kind, left_first), windows in by_kind.items():
            windows.sort()
            buckets.append((kind, left_first, tuple(w for w, _ in windows), tuple(n for _, n in windows)))
        return cls(tuple(buckets))

    def target(self, kept: Sequence[list[Pair]]) -> _Target:
        """The group as the pair loop reads it, each variant by its list of pairs (``kept``).
        FOLLOWED BY holds for ``0 < t(second) - t(first) <= d``; within for
        ``|t(b) - t(a)| <= d``, two different messages."""
        return tuple(
            (kind is TemporalKind.FOLLOWED_BY, left_first, windows, tuple(kept[n] for n in numbers))
            for kind, left_first, windows, numbers in self.buckets
        )


def assemble(code: Sequence[Code], sides: tuple[Mapping[str, bytes], Mapping[str, bytes]]) -> bytes:
    """One pair's result: the return's bytes with each slot filled from its side's fragment."""
    out = []
    for op in code:
        if isinstance(op, bytes):
            out.append(op)
        elif isinstance(op, Use):
            out.append(sides[op.side].get(op.key, b""))
        else:
            out.append(_slot_element(op, sides))
    return b"".join(out)


def _slot_element(op: SlotElement[Use], sides: tuple[Mapping[str, bytes], Mapping[str, bytes]]) -> bytes:
    body = b"".join(sides[use.side].get(use.key, b"") for use in op.slots)
    return op.start + body + op.end if body else op.empty


def _grouped(plans: Iterable[JoinPlan], key: Callable[[JoinPlan], object]) -> list[list[JoinPlan]]:
    groups: dict[object, list[JoinPlan]] = {}
    for plan in plans:
        groups.setdefault(key(plan), []).append(plan)
    return list(groups.values())
