"""Stage 2 of paper 001: join an hour's witnesses with the window's, for every join subscription.

A pair ``(l, r)`` of a subscription (``l`` bound by its left block, ``r`` by its right) qualifies
when every value join holds (some value of ``l``'s leaf equals some value of ``r``'s: XQuery's
general comparison) and the temporal term holds on the two messages' event times. It is delivered
in the hour of its later-arriving message, so that every pair is delivered exactly once, whatever
order the hours are routed in: stage 2 of hour ``H`` takes the pairs with one node from ``H`` and
the other from ``H`` or the hours before it within the window plus the allowed lateness.

Shared work (paper 001): subscriptions with the same blocks and value joins share their candidate
pairs, computed once per hour from the first join's value index (the hour's view cache, leaf and
value to nodes: a value semi-join before anything else, Algorithm 4), the other joins checked on
those candidates only; subscriptions that also agree on the temporal term share their pairs. A
subscription's result for the hour is one item per pair, in XQuery's order (the first binding's
stream and document order, then the second's), assembled from the fragments stage 1 rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

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
#: Matches enumerated between two checks whether a slice's subscriptions are all past their cap.
_FULL_CHECK = 4096


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
        cap, only ``max_pairs + 1`` of them (the subscription is withheld: low-cardinality joins can
        give 10⁸ pairs, which are never held).

        Set-oriented, as paper 001's one query per template: for each value slice (the feeds and the
        leaf paths of a first value join) the matching node pairs are enumerated once, from the two
        sides' value indexes, and each is handed to the subscriptions whose blocks bound both nodes;
        the work follows the matches, not the number of subscriptions.
        """
        window = _Window(hour, store)
        hours = window.hours(max((plan.reach(self.lateness) for plan in self.plans), default=0))
        groups = _grouped(self.plans, lambda p: (p.blocks, p.joins))
        sames = [_grouped(group, lambda p: p.key) for group in groups]
        kept: list[list[list[Pair]]] = [[[] for _ in same] for same in sames]
        slices: dict[tuple[tuple[str, str], tuple[str, str]], dict[tuple[str, str], list[int]]] = {}
        for number, group in enumerate(groups):
            plan = group[0]
            slices.setdefault((plan.feeds, plan.joins[0]), {}).setdefault(plan.blocks, []).append(number)
        for (feeds, (left_leaf, right_leaf)), by_blocks in slices.items():
            left_of, right_of = window.blocks_of(feeds[LEFT], hours), window.blocks_of(feeds[1], hours)
            by_left: dict[str, dict[str, list[int]]] = {}
            for (left_block, right_block), numbers in by_blocks.items():
                by_left.setdefault(left_block, {})[right_block] = numbers
            lefts = by_left.keys()
            numbers = [n for ns in by_blocks.values() for n in ns]
            for seen, pair in enumerate(window.matches(feeds, left_leaf, right_leaf, hours)):
                if seen % _FULL_CHECK == 0 and self._all_past_cap(numbers, kept):
                    break  # a low-cardinality slice whose every subscription is withheld: stop
                # the slice's subscriptions whose blocks bound both nodes (set intersections: a node
                # may be bound by thousands of blocks, few of them this slice's); each other value
                # join checked once for the pair, whatever number of groups share it
                checked: dict[tuple[str, str], bool] = {}
                for left_block in left_of.get(pair[0], _NONE) & lefts:
                    rights = by_left[left_block]
                    for right_block in right_of.get(pair[1], _NONE) & rights.keys():
                        for number in rights[right_block]:
                            plan = groups[number][0]
                            if self._rest_hold(pair, plan, checked, window):
                                self._offer(pair, sames[number], kept[number], window)
        found: dict[str, list[Pair]] = {}
        for same, lists in zip(sames, kept, strict=True):
            for plans, pairs in zip(same, lists, strict=True):
                pairs.sort()
                found.update((plan.sid, pairs) for plan in plans)
        return found

    def _all_past_cap(self, numbers: list[int], kept: list[list[list[Pair]]]) -> bool:
        return all(len(pairs) > self.max_pairs for n in numbers for pairs in kept[n])

    @staticmethod
    def _rest_hold(pair: Pair, plan: JoinPlan, checked: dict[tuple[str, str], bool], window: _Window) -> bool:
        """Whether the group's value joins after the first hold for the pair (memo per pair)."""
        for join in plan.joins[1:]:
            holds = checked.get(join)
            if holds is None:
                holds = checked[join] = window.compares(plan.feeds, pair[0], pair[1], join)
            if not holds:
                return False
        return True

    def _offer(
        self, pair: Pair, sames: list[list[JoinPlan]], kept: list[list[Pair]], window: _Window
    ) -> None:
        """A candidate of one (blocks, joins) group whose value joins hold: kept for each temporal
        variant it satisfies, up to cap + 1."""
        for same, pairs in zip(sames, kept, strict=True):
            if len(pairs) <= self.max_pairs and _holds(pair, same[0], window):
                pairs.append(pair)

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
        self._memberships: dict[tuple[str, tuple[datetime, ...]], dict[NodeRef, frozenset[str]]] = {}

    def hours(self, back: int) -> list[datetime]:
        return [self.hour - ONE_HOUR * k for k in range(back, -1, -1)]

    def witnesses(self, feed: str, hour: datetime) -> HourWitnesses | None:
        key = (feed, hour)
        if key not in self._loaded:
            self._loaded[key] = self._store(feed, hour)
        return self._loaded[key]

    def roots(self, feed: str, block: str, hours: Sequence[datetime]) -> list[NodeRef]:
        """The block's nodes in those hours whose messages have a usable event time."""
        found: list[NodeRef] = []
        for hour in hours:
            hw = self.witnesses(feed, hour)
            if hw is not None:
                found.extend((hour, m, n) for m, n in hw.roots.get(block, ()) if hw.messages[m].time)
        return found

    def values(self, feed: str, node: NodeRef, leaf: str) -> tuple[str, ...]:
        hw = self.witnesses(feed, node[0])
        return hw.values.get(node[1:], {}).get(leaf, ()) if hw is not None else ()

    def blocks_of(self, feed: str, hours: Sequence[datetime]) -> dict[NodeRef, frozenset[str]]:
        """Each node of those hours with a usable event time -> the blocks that bound it."""
        key = (feed, tuple(hours))
        found = self._memberships.get(key)
        if found is None:
            sets: dict[NodeRef, set[str]] = {}
            for hour in hours:
                hw = self.witnesses(feed, hour)
                if hw is None:
                    continue
                for block, nodes in hw.roots.items():
                    for m, n in nodes:
                        if hw.messages[m].time is not None:
                            sets.setdefault((hour, m, n), set()).add(block)
            found = self._memberships[key] = {node: frozenset(blocks) for node, blocks in sets.items()}
        return found

    def matches(
        self, feeds: tuple[str, str], left_leaf: str, right_leaf: str, hours: Sequence[datetime]
    ) -> Iterator[Pair]:
        """The node pairs whose ``left_leaf`` and ``right_leaf`` share a value, one of them of this
        hour (the value semi-join of the two sides, from the hours' value indexes); each pair once,
        at the least value they share."""
        for left_hour in hours:
            left = self.witnesses(feeds[LEFT], left_hour)
            if left is None:
                continue
            right_hours = hours if left_hour == self.hour else [self.hour]
            left_index = left.value_index(left_leaf)
            for right_hour in right_hours:
                right = self.witnesses(feeds[1], right_hour)
                if right is None:
                    continue
                right_index = right.value_index(right_leaf)
                for value in left_index.keys() & right_index.keys():
                    for m, n in left_index[value]:
                        for rm, rn in right_index[value]:
                            pair = ((left_hour, m, n), (right_hour, rm, rn))
                            if self._least_shared(pair, feeds, left_leaf, right_leaf) == value:
                                yield pair

    def _least_shared(self, pair: Pair, feeds: tuple[str, str], left_leaf: str, right_leaf: str) -> str:
        ours = self.values(feeds[LEFT], pair[0], left_leaf)
        if len(ours) == 1:
            return ours[0]
        return min(set(ours) & set(self.values(feeds[1], pair[1], right_leaf)))

    def compares(self, feeds: tuple[str, str], left: NodeRef, right: NodeRef, join: tuple[str, str]) -> bool:
        ours = self.values(feeds[LEFT], left, join[0])
        return bool(ours) and not set(ours).isdisjoint(self.values(feeds[1], right, join[1]))

    def time_of(self, feed: str, node: NodeRef) -> datetime:
        hw = self.witnesses(feed, node[0])
        assert hw is not None and hw.messages[node[1]].time is not None  # roots() keeps timed ones
        return hw.messages[node[1]].time  # type: ignore[return-value]

    def fragments(
        self, feeds: tuple[str, str], pair: Pair
    ) -> tuple[Mapping[str, bytes], Mapping[str, bytes]]:
        sides = []
        for feed, node in zip(feeds, pair, strict=True):
            hw = self.witnesses(feed, node[0])
            sides.append(hw.fragments.get(node[1:], {}) if hw is not None else {})
        return sides[0], sides[1]


def _holds(pair: Pair, plan: JoinPlan, window: _Window) -> bool:
    """Whether the pair's messages' event times satisfy the plan's temporal term."""
    left, right = window.time_of(plan.feeds[LEFT], pair[0]), window.time_of(plan.feeds[1], pair[1])
    first, second = (left, right) if plan.left_first else (right, left)
    gap = second - first
    if plan.kind is TemporalKind.FOLLOWED_BY:
        return timedelta(0) < gap <= plan.window
    return abs(gap) <= plan.window and not _same_message(pair, plan)  # within: two messages


def _same_message(pair: Pair, plan: JoinPlan) -> bool:
    return plan.feeds[0] == plan.feeds[1] and pair[0][:2] == pair[1][:2]


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
