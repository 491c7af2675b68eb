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
those candidates. A subscription's result for the hour is one item per pair, in XQuery's order (the
first binding's stream and document order, then the second's), assembled from the fragments stage
1 rendered.

The relational work is done as paper 001 does it, set at a time: a slice's matches are arrays of
node numbers (NumPy), and a group takes its pairs from them with a few array operations (its
blocks' nodes, its other joins' values, its windows) instead of one Python step per pair and
group; the pairs' tuples are made once per match, whatever number of lists they go to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from itertools import count
from typing import Any

import numpy as np
import numpy.typing as npt

from feedrouter import heap
from feedrouter.hours import format_hour
from feedrouter.join.plan import LEFT, BlockSpec, Code, JoinPlan, Use
from feedrouter.join.relations import ONE_HOUR, HourWitnesses
from feedrouter.lang.ast import TemporalKind
from feedrouter.limits import JoinLimits

#: A node of the window: (hour, message number in its hour, element id); ordered as XQuery orders
#: a stream's nodes (stream order of messages, then document order).
NodeRef = tuple[datetime, int, int]
Pair = tuple[NodeRef, NodeRef]
#: How stage 2 reads a feed's hour of witnesses: None when the hour has none (yet).
WitnessStore = Callable[[str, datetime], "HourWitnesses | None"]
#: A value slice: the two feeds and the leaf paths of a driving value join.
Slice = tuple[tuple[str, str], tuple[str, str]]

#: The bytes of results a delivery holds (made once, as they are checked); past them it keeps
#: their pairs only and makes them again as they are written: a process holds a few deliveries at
#: once (its writers', twice over), each up to the feed's max_join_result_bytes otherwise.
HELD_RESULT_BYTES = 8 << 20
#: The feed's defaults (:class:`~feedrouter.catalog.compiled.FeedConfig` carries a feed's own).
DEFAULT_LIMITS = JoinLimits()
_MICROSECOND = timedelta(microseconds=1)


@dataclass
class JoinDelivery:
    """What one join subscription gets for one hour: one result per qualifying pair, in order
    (none for a pair whose return is the empty sequence), or
    nothing with ``withheld`` saying why (more pairs, or more bytes of results, than the
    subscription's hour may hold: FR313). A pair whose result alone is larger than a result may be
    (FR310) is left out and counted in ``refused``, ``refusal`` saying why for the first of them;
    the other pairs are delivered, as an ordinary subscription's other documents are."""

    sid: str
    hour: datetime
    results: list[bytes] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)  # each result's two nodes: its provenance
    #: the qualifying pairs; withheld, the cap + 1 (pairs are not counted past the cap: there may be 10^8)
    count: int = 0
    withheld: str | None = None
    refused: int = 0
    refusal: str | None = None
    #: the results' bytes together
    size: int = 0
    #: how a result is made again from its pair as it is written (None: ``results`` holds them):
    #: a subscription's hour past :data:`HELD_RESULT_BYTES` is checked by sizes, and not held
    assembler: Callable[[Pair], bytes] | None = field(default=None, repr=False, compare=False)

    def each_result(self) -> Iterator[bytes]:
        """The results in order: those held, or each assembled as it is asked for."""
        if self.assembler is None:
            yield from self.results
        else:
            yield from map(self.assembler, self.pairs)


class JoinStage:
    """Stage 2 over a set of compiled join subscriptions (one plan build's)."""

    def __init__(
        self,
        plans: Iterable[JoinPlan],
        specs: Mapping[str, BlockSpec],
        *,
        lateness: timedelta = ONE_HOUR,
        limits: JoinLimits = DEFAULT_LIMITS,
    ) -> None:
        self.plans = list(plans)
        self.specs = dict(specs)
        self.lateness = lateness
        self.limits = limits

    @property
    def max_pairs(self) -> int:
        """The pairs a subscription's hour may have (past them it is withheld)."""
        return self.limits.pairs_per_hour

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
        with heap.paused(keep=True):  # millions of small objects, none of them garbage
            return self._pairs(hour, store)

    def slices(self, hour: datetime, store: WitnessStore) -> dict[Slice, list[JoinPlan]]:
        """The subscriptions by value slice in ``hour``: the feeds and leaf paths of their driving
        value join (:meth:`_Window.driving`, from the hour's own witnesses only). A slice is the
        unit of shared work: a stage over a union of whole slices gives each of its subscriptions
        the pairs a stage over all of them gives, with the same work, which is how the population
        is partitioned across workers (:mod:`feedrouter.spark.joinparts`)."""
        window = _Window(hour, store)
        found: dict[Slice, list[JoinPlan]] = {}
        for plan in self.plans:
            found.setdefault((plan.feeds, window.driving(plan.feeds, plan.joins)), []).append(plan)
        return found

    def _pairs(self, hour: datetime, store: WitnessStore) -> dict[str, list[Pair]]:
        window = _Window(hour, store)
        hours = {feed: window.hours(back) for feed, back in self.reach_of_feeds().items()}
        groups = _grouped(self.plans, lambda p: (p.blocks, p.joins))
        sames = [_grouped(group, lambda p: p.key) for group in groups]
        kept: list[list[list[Pair]]] = [[[] for _ in same] for same in sames]
        targets = [_Temporal.of(same).target(lists) for same, lists in zip(sames, kept, strict=True)]
        slices: dict[Slice, dict[tuple[str, str], list[int]]] = {}
        # each group's value joins besides the driving one, numbered (0: none): the groups of a
        # pair of blocks that share such a conjunction check it once
        rest_ids: dict[tuple[tuple[str, str], ...], int] = {(): 0}
        rests: list[int] = []
        for number, group in enumerate(groups):
            plan = group[0]
            drive = window.driving(plan.feeds, plan.joins)
            others = tuple(join for join in plan.joins if join != drive)
            rests.append(rest_ids.setdefault(others, len(rest_ids)))
            slices.setdefault((plan.feeds, drive), {}).setdefault(plan.blocks, []).append(number)
        rest_joins = list(rest_ids)
        streams = _Streams(window, hours)
        for (feeds, leaves), by_blocks in slices.items():
            by_left: dict[str, dict[str, _Route]] = {}
            for (left_block, right_block), numbers in by_blocks.items():
                by_left.setdefault(left_block, {})[right_block] = _by_rest(numbers, rests, targets)
            lists = [pairs for ns in by_blocks.values() for n in ns for pairs in kept[n]]
            blocks = (frozenset(by_left), frozenset(right for _, right in by_blocks))
            slice_ = _Slice(streams, feeds, leaves, blocks, rest_joins, self.max_pairs + 1)
            for chunk in slice_.chunks():
                slice_.serve(chunk, by_left)
                if all(len(pairs) > self.max_pairs for pairs in lists):
                    break  # a low-cardinality slice whose every subscription is withheld: stop
        found: dict[str, list[Pair]] = {}
        for same, lists in zip(sames, kept, strict=True):
            for plans, pairs in zip(same, lists, strict=True):  # in order: see _Slice.chunks
                found.update((plan.sid, pairs) for plan in plans)
        return found

    def deliver(
        self, hour: datetime, store: WitnessStore, pairs: Mapping[str, list[Pair]]
    ) -> dict[str, JoinDelivery]:
        """Each subscription's delivery of its ``pairs`` (another engine's, e.g. Spark SQL's):
        the results assembled from the fragments and held, or withheld past the cap."""
        return {found.sid: found for found in self.deliveries(hour, store, dict(pairs), hold=True)}

    def reach_of_feeds(self) -> dict[str, int]:
        """How many hours back each feed is read (:func:`reach_of_feeds`)."""
        return reach_of_feeds(self.plans, self.lateness)

    def messages_needed(self, pairs: Mapping[str, list[Pair]]) -> dict[tuple[str, datetime], set[int]]:
        """The messages whose fragments delivering ``pairs`` reads, by feed and hour: of the window's
        witnesses, only these need reading (a subscription past its cap of pairs reads none)."""
        sides: dict[str, set[tuple[datetime, int]]] = {}
        seen: set[tuple[tuple[str, str], int]] = set()
        for plan in self.plans:
            found = pairs.get(plan.sid, ())
            # subscriptions alike share one list of pairs (the stage's, up to millions): once each
            if len(found) > self.max_pairs or (plan.feeds, id(found)) in seen:
                continue
            seen.add((plan.feeds, id(found)))
            left, right = (sides.setdefault(feed, set()) for feed in plan.feeds)
            left.update((hour, message) for (hour, message, _), _ in found)
            right.update((hour, message) for _, (hour, message, _) in found)
        needed: dict[tuple[str, datetime], set[int]] = {}
        for feed, messages in sides.items():
            for hour, message in messages:
                needed.setdefault((feed, hour), set()).add(message)
        return needed

    def deliveries(
        self,
        hour: datetime,
        store: WitnessStore,
        pairs: dict[str, list[Pair]],
        order: Callable[[str], Any] | None = None,
        *,
        hold: bool = False,
    ) -> Iterator[JoinDelivery]:
        """Each subscription's delivery, one at a time (in ``order`` of their ids; None: the
        stage's), its pairs taken out of ``pairs`` as it goes: an hour's results are never all
        held at once (millions of pairs an hour, each result a few hundred bytes). A delivery holds
        its results up to :data:`HELD_RESULT_BYTES`; past them they are checked on their sizes and
        made again as they are written (:meth:`JoinDelivery.each_result`); with ``hold``, all are
        held in ``results``."""
        window = _Window(hour, store)
        plans = self.plans if order is None else sorted(self.plans, key=lambda plan: order(plan.sid))
        for plan in plans:
            yield self._deliver(plan, sorted(pairs.pop(plan.sid, ())), window, hold)

    def _deliver(self, plan: JoinPlan, pairs: list[Pair], window: _Window, hold: bool) -> JoinDelivery:
        delivery = JoinDelivery(plan.sid, window.hour, count=len(pairs))
        limits = self.limits
        if len(pairs) > limits.pairs_per_hour:
            delivery.withheld = (
                f"[FR313] more than {limits.pairs_per_hour} pairs in the hour (the feed's max_join_pairs); "
                "make the join more selective"
            )
            return delivery
        # results are held up to HELD_RESULT_BYTES (most subscriptions' whole hour: made once);
        # past it only their sizes are kept, and all are made again as they are written
        held: list[bytes] | None = []
        for pair in pairs:
            sides = window.fragments(plan.feeds, pair)
            result = assemble(plan.code, sides) if held is not None else None
            size = len(result) if result is not None else assembled_size(plan.code, sides)
            if not size:
                continue  # the return is the empty sequence for this pair: no item, as in XQuery
            if size > limits.per_pair:
                delivery.refused += 1
                if delivery.refusal is None:
                    delivery.refusal = _refusal(plan.feeds, pair, size, limits.per_pair)
                continue
            delivery.size += size
            if delivery.size > limits.bytes_per_hour:
                delivery.pairs, delivery.refused, delivery.refusal, delivery.size = [], 0, None, 0
                delivery.withheld = (
                    f"[FR313] more than {limits.bytes_per_hour} bytes of results in the hour (the feed's "
                    "max_join_result_bytes); make the join more selective, or return less of each message"
                )
                return delivery
            delivery.pairs.append(pair)
            if held is not None and result is not None:
                held.append(result)
                if delivery.size > HELD_RESULT_BYTES and not hold:
                    held = None
        if held is not None:
            delivery.results = held
        else:
            delivery.assembler = partial(_assembled, plan, window)
        return delivery


def _assembled(plan: JoinPlan, window: _Window, pair: Pair) -> bytes:
    return assemble(plan.code, window.fragments(plan.feeds, pair))


def reach_of_feeds(plans: Iterable[JoinPlan], lateness: timedelta) -> dict[str, int]:
    """How many hours back each feed is read: the longest reach of the plans that read it (a feed
    a short join reads is not read back over another feed's long window, nor are hours no join
    of it needs, which the stage does not check for nor protect from retention)."""
    reach: dict[str, int] = {}
    for plan in plans:
        back = plan.reach(lateness)
        for feed in plan.feeds:
            reach[feed] = max(reach.get(feed, 0), back)
    return reach


def _refusal(feeds: tuple[str, str], pair: Pair, size: int, limit: int) -> str:
    """Why a pair's result is left out (FR310), naming the pair's two messages."""
    nodes = " and ".join(
        f"{feed} {format_hour(hour)} message {message} node {node}"
        for feed, (hour, message, node) in zip(feeds, pair, strict=True)
    )
    return (
        f"[FR310] the result of the pair of {nodes} is {size} bytes, more than the feed's "
        f"max_result_bytes ({limit}); return less of each message"
    )


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
        """How many pairs of this hour's joinable nodes share a value of the join's leaves (a cost
        estimate)."""
        key = (feeds, join)
        found = self._estimates.get(key)
        if found is None:
            left, right = self.witnesses(feeds[LEFT], self.hour), self.witnesses(feeds[1], self.hour)
            found = 0
            if left is not None and right is not None:
                found = left.matches(join[0], right, join[1])
            self._estimates[key] = found
        return found

    def fragments(
        self, feeds: tuple[str, str], pair: Pair
    ) -> tuple[Mapping[str, bytes], Mapping[str, bytes]]:
        sides = []
        for feed, node in zip(feeds, pair, strict=True):
            hw = self.witnesses(feed, node[0])
            sides.append(hw.fragments.get(node[1:], {}) if hw is not None else {})
        return sides[0], sides[1]


#: The temporal variants of one group of one kind and orientation: (FOLLOWED BY?, left binding
#: first?, their windows ascending in microseconds, their pair lists in that order).
_Bucket = tuple[bool, bool, tuple[int, ...], tuple[list[Pair], ...]]
#: One group a pair can serve: its buckets.
_Target = tuple[_Bucket, ...]
#: The groups of one pair of blocks, by the other value joins their pairs must satisfy (each
#: conjunction's number, 0: none), with their buckets.
_Route = list[tuple[int, list[_Bucket]]]
#: The most matches of a slice enumerated at once (a chunk: about 40 bytes each in its arrays); a
#: left node's matches are never split between two chunks.
_CHUNK = 1 << 22
#: Pairs chosen for pair lists in a chunk before their tuples are made and the lists extended.
_PENDING = 1 << 24
#: The most columns of values a leaf gets per node (:meth:`_Streams.columns`): a node with more is
#: checked on its own, so that one document's thousand categories cost no column per node.
_COLUMNS = 4
#: Above this many candidates from the left side, a group looks at the right side's count too.
_LOOK_RIGHT = 1 << 12

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
_EMPTY: Ints = np.zeros(0, np.int64)


class _Stream:
    """One feed's joinable nodes over the window, numbered in stream order (hours ascending, then
    each hour's order), as arrays: the numbering every slice over the feed uses."""

    def __init__(
        self, window: _Window, feed: str, hours: Sequence[datetime], vocabulary: _Vocabulary
    ) -> None:
        self.vocabulary = vocabulary
        parts = []
        offset = 0
        for number, hour in enumerate(hours):
            hw = window.witnesses(feed, hour)
            if hw is None:
                continue
            arrays = hw.arrays()
            parts.append((hw, arrays, offset, number))
            offset += len(arrays.refs)
        self._parts = parts
        self.size = offset
        #: the first node of the window's own hour: the nodes before it pair only with its nodes
        self.current = parts[-1][2] if parts and parts[-1][0].hour == window.hour else offset
        self.refs = _objects([ref for _, arrays, _, _ in parts for ref in arrays.refs])
        self.times: Ints = np.concatenate([a.times for _, a, _, _ in parts] or [_EMPTY])
        # a message's number in the window: the hour's number above its number in the hour
        self.messages: Ints = np.concatenate(
            [a.messages + (number << 32) for _, a, _, number in parts] or [_EMPTY]
        )
        self._members: dict[str, Ints] = {}
        self._entries: dict[str, tuple[Ints, Ints]] = {}

    def members(self, block: str) -> Ints:
        """The nodes ``block`` bound, ascending."""
        found = self._members.get(block)
        if found is None:
            found = self._members[block] = np.concatenate(
                [a.blocks[block] + offset for _, a, offset, _ in self._parts if block in a.blocks] or [_EMPTY]
            )
        return found

    def entries(self, leaf: str, blocks: Iterable[str] = ()) -> tuple[Ints, Ints]:
        """(node, value number) for each distinct value of ``leaf`` each node has, sorted by node
        then value; values numbered by the run's vocabulary (every leaf's and feed's: a value
        join compares strings, whatever leaves they come from). With ``blocks``, only the nodes
        one of them bound (the others serve no subscription of a slice: enumerating their matches
        would cost what a low-cardinality leaf gives the whole feed)."""
        found = self._entries.get(leaf)
        if found is None:
            nodes, values = self._entries_of(leaf)
            order = np.lexsort((values, nodes))
            found = self._entries[leaf] = (nodes[order], values[order])
        bound = self.bound(blocks) if blocks else None
        if bound is None:
            return found
        taken = bound[found[0]]
        return found[0][taken], found[1][taken]

    def bound(self, blocks: Iterable[str]) -> Bools | None:
        """Which nodes one of ``blocks`` bound (None: all of them, as a block without conditions
        does; found first, so that a slice over one does not mark every node once per block)."""
        chosen = sorted(blocks, key=lambda block: -len(self.members(block)))
        if not chosen or len(self.members(chosen[0])) == self.size:
            return None
        marks = np.zeros(self.size, np.bool_)
        for number, block in enumerate(chosen, 1):
            marks[self.members(block)] = True
            if number % 64 == 0 and marks.all():
                return None
        return marks

    def _entries_of(self, leaf: str) -> tuple[Ints, Ints]:
        nodes, values = [], []
        for hw, _, offset, _ in self._parts:
            found = hw.leaf_entries(leaf)
            values.append(np.repeat(self.vocabulary.numbers(found.values), found.counts))
            nodes.append(found.positions + offset)
        return np.concatenate(nodes or [_EMPTY]), np.concatenate(values or [_EMPTY])


class _Vocabulary:
    """A number for each value string of one run (not dense: each look-up offers the next number,
    which a known value declines; all of it in C)."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._next = count()

    def numbers(self, values: Sequence[str]) -> Ints:
        return np.fromiter(map(self._numbers.setdefault, values, self._next), np.int64, len(values))


def _objects(items: list[object]) -> npt.NDArray[np.object_]:
    """An array of Python objects (tuples stay whole: NumPy would read them as rows)."""
    return np.fromiter(items, object, len(items))


class _Streams:
    """The streams of one run of stage 2, each made once, and each join's values as arrays."""

    def __init__(self, window: _Window, hours: Mapping[str, Sequence[datetime]]) -> None:
        self.window, self.hours = window, hours  # each feed's, oldest first
        self._streams: dict[str, _Stream] = {}
        self._columns: dict[tuple[str, str, int], _Columns] = {}
        self.vocabulary = _Vocabulary()

    def stream(self, feed: str) -> _Stream:
        found = self._streams.get(feed)
        if found is None:
            found = self._streams[feed] = _Stream(self.window, feed, self.hours[feed], self.vocabulary)
        return found

    def columns(self, feed: str, leaf: str, absent: int) -> _Columns:
        """Each node's values of ``leaf`` as value numbers, one array per column (a node's first
        value, its second...; ``absent`` where it has no more): two nodes' values meet when a column
        of one equals a column of the other where they differ on absent (-1 on a join's left
        side, -2 on its right: never equal). At most :data:`_COLUMNS` columns, whatever one
        document holds: a node with more values keeps all of them in ``many``."""
        key = (feed, leaf, absent)
        found = self._columns.get(key)
        if found is None:
            stream = self.stream(feed)
            nodes, values = stream.entries(leaf)
            counts = np.bincount(nodes, minlength=stream.size)
            firsts = np.cumsum(counts) - counts
            ranks = np.arange(len(nodes)) - firsts[nodes]
            columns = []
            for rank in range(min(max(int(counts.max(initial=0)), 1), _COLUMNS)):
                column = np.full(stream.size, absent, np.int64)
                taken = ranks == rank
                column[nodes[taken]] = values[taken]
                columns.append(column)
            crowded = np.flatnonzero(counts > _COLUMNS)
            many = {
                int(node): frozenset(values[firsts[node] : firsts[node] + counts[node]].tolist())
                for node in crowded
            }
            found = self._columns[key] = _Columns(columns, counts > _COLUMNS, many)
        return found


@dataclass(frozen=True)
class _Columns:
    """A leaf's values per node of a stream (:meth:`_Streams.columns`)."""

    columns: list[Ints]
    crowded: Bools  # the nodes with more values than columns
    many: dict[int, frozenset[int]]  # their values

    def values_of(self, node: int) -> frozenset[int]:
        found = self.many.get(node)
        if found is None:
            found = frozenset(int(column[node]) for column in self.columns) - {-1, -2}
        return found


@dataclass
class _Chunk:
    """Matches of a slice, in XQuery's order (left node, then right node, each in stream order)."""

    lefts: Ints
    rights: Ints
    gaps: Ints  # the right node's event time minus the left's, microseconds
    same_message: Bools | None  # None when the two sides are different feeds
    right_size: int  # the right stream's nodes
    _by_left: Ints | None = None
    _by_right: tuple[Ints, Ints] | None = None

    def __len__(self) -> int:
        return len(self.lefts)

    def from_left(self, nodes: Ints) -> tuple[Ints, Ints]:
        """The first match of each of ``nodes`` (left nodes of the chunk's range) and their
        numbers of matches."""
        low = self.lefts[0]
        if self._by_left is None:
            self._by_left = np.searchsorted(self.lefts, np.arange(low, self.lefts[-1] + 2))
        firsts = self._by_left[nodes - low]
        return firsts, self._by_left[nodes - low + 1] - firsts

    def from_right(self, nodes: Ints) -> tuple[Ints, Ints, Ints]:
        """As :meth:`from_left` for right nodes, in the order of :attr:`rights` sorted (the third)."""
        if self._by_right is None:
            order = np.argsort(self.rights, kind="stable")
            firsts = np.zeros(self.right_size + 1, np.int64)
            np.cumsum(np.bincount(self.rights, minlength=self.right_size), out=firsts[1:])
            self._by_right = (order, firsts)
        order, by_right = self._by_right
        firsts = by_right[nodes]
        return firsts, by_right[nodes + 1] - firsts, order


def _spans(firsts: Ints, counts: Ints) -> Ints:
    """The indexes ``firsts[i] .. firsts[i] + counts[i] - 1`` for every ``i``, in that order."""
    total = int(counts.sum())
    if not total:
        return _EMPTY
    ends = np.cumsum(counts)
    return np.repeat(firsts - (ends - counts), counts) + np.arange(total)


class _Slice:
    """A value slice's matches (paper 001's value semi-join: the pairs of nodes of the two sides'
    streams that share a value of the driving join's leaves, one of them of the window's own hour)
    and the groups they serve, as array operations over chunks of matches."""

    def __init__(
        self,
        streams: _Streams,
        feeds: tuple[str, str],
        leaves: tuple[str, str],
        blocks: tuple[frozenset[str], frozenset[str]],
        rest_joins: Sequence[tuple[tuple[str, str], ...]],
        keep: int,
    ) -> None:
        self.streams, self.feeds, self.rest_joins, self.keep = streams, feeds, rest_joins, keep
        self.left, self.right = streams.stream(feeds[LEFT]), streams.stream(feeds[1])
        self.same_feed = feeds[LEFT] == feeds[1]
        self.leaves, self.blocks = leaves, blocks
        self._marks = (np.zeros(self.left.size, np.bool_), np.zeros(self.right.size, np.bool_))

    def chunks(self) -> Iterator[_Chunk]:
        """The matches in XQuery's order, in chunks of about :data:`_CHUNK`: each left node (in
        stream order) with the right nodes holding one of its values (in stream order), all of the
        window's for a node of its own hour, the own hour's only for an earlier one; a pair once,
        however many values its two nodes share."""
        left, right = self.left, self.right
        lefts, values = left.entries(self.leaves[LEFT], self.blocks[LEFT])
        rights, right_values = right.entries(self.leaves[1], self.blocks[1])
        if not len(lefts) or not len(rights):
            return
        size = right.size
        order = np.lexsort((rights, right_values))
        keys = right_values[order] * size + rights[order]  # by value, then node: one run per value
        rights = rights[order]
        earliest = np.where(lefts >= left.current, 0, right.current)
        firsts = np.searchsorted(keys, values * size + earliest)
        counts = np.searchsorted(keys, values * size + size) - firsts
        several = np.zeros(left.size, np.bool_)  # left nodes with more than one value
        several[lefts[1:][lefts[1:] == lefts[:-1]]] = True
        ends = np.cumsum(counts)
        start = 0
        while start < len(lefts):
            stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + _CHUNK, "right"))
            stop = max(stop, start + 1)
            stop = int(np.searchsorted(lefts, lefts[stop - 1], "right"))  # the node's last entry
            taken = slice(start, stop)
            start = stop
            chosen = _spans(firsts[taken], counts[taken])
            if not len(chosen):
                continue
            ours = np.repeat(lefts[taken], counts[taken])
            theirs = rights[chosen]
            if several[lefts[taken]].any():
                ours, theirs = _distinct_in_order(ours, theirs, several, size)
            yield _Chunk(
                ours,
                theirs,
                right.times[theirs] - left.times[ours],
                left.messages[ours] == right.messages[theirs] if self.same_feed else None,
                size,
            )

    def serve(self, chunk: _Chunk, by_left: Mapping[str, Mapping[str, _Route]]) -> None:
        """Append each match of ``chunk`` to the pair lists of the groups it serves: those whose
        blocks bound its two nodes, whose other value joins hold for it and whose temporal
        variants it satisfies (each list up to ``keep`` pairs)."""
        chosen: list[tuple[list[Pair], Ints]] = []
        pending = 0
        low, high = chunk.lefts[0], chunk.lefts[-1]
        for left_block, routes in by_left.items():
            ours = self.left.members(left_block)
            ours = ours[np.searchsorted(ours, low) : np.searchsorted(ours, high, "right")]
            if not len(ours):
                continue
            firsts, counts = chunk.from_left(ours)
            found = int(counts.sum())
            if not found:
                continue
            for right_block, route in routes.items():
                if not any(len(pairs) < self.keep for _, b in route for *_, lists in b for pairs in lists):
                    continue
                candidates = self._candidates(chunk, ours, firsts, counts, found, right_block)
                for rest, buckets in route:
                    served = candidates
                    if rest and len(served):
                        served = served[self._rest_holds(chunk, served, self.rest_joins[rest])]
                    if len(served):
                        pending += self._choose(chunk, served, buckets, chosen)
                if pending > _PENDING:
                    self._extend(chunk, chosen)
                    chosen, pending = [], 0
        self._extend(chunk, chosen)

    def _candidates(
        self, chunk: _Chunk, ours: Ints, firsts: Ints, counts: Ints, found: int, right_block: str
    ) -> Ints:
        """The matches whose left node is one of ``ours`` (a left block's, with their first
        matches and counts) and whose right node the right block bound, ascending: from the side
        with fewer matches, the other side's block checked on them."""
        theirs = self.right.members(right_block)
        if found > _LOOK_RIGHT:
            right_firsts, right_counts, order = chunk.from_right(theirs)
            if int(right_counts.sum()) < found:
                candidates = np.sort(order[_spans(right_firsts, right_counts)])
                return candidates[self._marked(LEFT, ours, chunk.lefts[candidates])]
        candidates = _spans(firsts, counts)
        return candidates[self._marked(1, theirs, chunk.rights[candidates])]

    def _marked(self, side: int, members: Ints, nodes: Ints) -> Bools:
        """Which of ``nodes`` are ``members`` (one reused mark per node of the side's stream)."""
        marks = self._marks[side]
        marks[members] = True
        found = marks[nodes]
        marks[members] = False
        return found

    def _rest_holds(self, chunk: _Chunk, served: Ints, rest: tuple[tuple[str, str], ...]) -> Bools:
        """Which matches satisfy every other value join (XQuery's general comparison: some value
        of the one equal to some value of the other)."""
        lefts, rights = chunk.lefts[served], chunk.rights[served]
        holds: Bools | None = None
        for join in rest:
            ours = self.streams.columns(self.feeds[LEFT], join[LEFT], -1)
            theirs = self.streams.columns(self.feeds[1], join[1], -2)
            mine = [column[lefts] for column in ours.columns]
            meets: Bools | None = None
            for column in theirs.columns:
                yours = column[rights]
                for values in mine:
                    found = values == yours
                    meets = found if meets is None else meets | found
            assert meets is not None  # every side has a column
            crowded = np.flatnonzero(ours.crowded[lefts] | theirs.crowded[rights])
            for at in crowded.tolist():  # a node with more values than columns: all of them
                meets[at] = not ours.values_of(int(lefts[at])).isdisjoint(theirs.values_of(int(rights[at])))
            holds = meets if holds is None else holds & meets
        assert holds is not None  # a rest has a join
        return holds

    def _choose(
        self, chunk: _Chunk, served: Ints, buckets: Sequence[_Bucket], chosen: list[tuple[list[Pair], Ints]]
    ) -> int:
        """Choose, for each temporal variant of a group, the matches whose gap it admits."""
        gaps = chunk.gaps[served]
        added = 0
        for followed_by, left_first, spans, lists in buckets:
            ahead = gaps if left_first else -gaps
            if followed_by:
                admitted = (ahead > 0) & (ahead <= spans[-1])
            else:
                ahead = np.abs(ahead)
                admitted = ahead <= spans[-1]
                if chunk.same_message is not None:
                    admitted &= ~chunk.same_message[served]
            within, ahead = served[admitted], ahead[admitted]
            for span, pairs in zip(spans, lists, strict=True):
                room = self.keep - len(pairs)
                if room > 0 and len(within):
                    picked = (within if span == spans[-1] else within[ahead <= span])[:room]
                    chosen.append((pairs, picked))
                    added += len(picked)
        return added

    def _extend(self, chunk: _Chunk, chosen: list[tuple[list[Pair], Ints]]) -> None:
        """Make the chosen matches' pairs (one tuple per match, shared by every list it goes to)
        and append them to their lists."""
        if not chosen:
            return
        used = np.zeros(len(chunk), np.bool_)
        for _, picked in chosen:
            used[picked] = True
        numbers = np.flatnonzero(used)
        ours, theirs = self.left.refs[chunk.lefts[numbers]], self.right.refs[chunk.rights[numbers]]
        made = _objects(list(zip(ours, theirs, strict=True)))
        rank = np.cumsum(used) - 1
        for pairs, picked in chosen:
            pairs += made[rank[picked]].tolist()


def _distinct_in_order(ours: Ints, theirs: Ints, several: Bools, size: int) -> tuple[Ints, Ints]:
    """Matches of left nodes with several values come once per value they share, value by value:
    once each, in order (the others are in order already)."""
    keys = ours * size + theirs
    many = several[ours]
    keys = np.concatenate((keys[~many], np.unique(keys[many])))
    keys.sort(kind="stable")
    return keys // size, keys % size


def _by_rest(numbers: Iterable[int], rests: Sequence[int], targets: Sequence[_Target]) -> _Route:
    """Groups of one pair of blocks by their other value joins."""
    by_rest: dict[int, list[_Bucket]] = {}
    for number in numbers:
        by_rest.setdefault(rests[number], []).extend(targets[number])
    return list(by_rest.items())


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
    return b"".join(_pieces(code, sides))


def assembled_size(code: Sequence[Code], sides: tuple[Mapping[str, bytes], Mapping[str, bytes]]) -> int:
    """``len(assemble(code, sides))``, without joining the bytes (the pieces are the fragments'
    own): a delivery past the bytes it holds is checked against its limits by size."""
    return sum(map(len, _pieces(code, sides)))


def _pieces(code: Sequence[Code], sides: tuple[Mapping[str, bytes], Mapping[str, bytes]]) -> list[bytes]:
    """The pieces of one pair's result, in order: the return's constants and its slots' fragments."""
    out: list[bytes] = []
    for op in code:
        if isinstance(op, bytes):
            out.append(op)
        elif isinstance(op, Use):
            out.append(sides[op.side].get(op.key, b""))
        else:
            body = [sides[use.side].get(use.key, b"") for use in op.slots]
            if any(body):
                out.append(op.start)
                out += body
                out.append(op.end)
            else:
                out.append(op.empty)
    return out


def _grouped(plans: Iterable[JoinPlan], key: Callable[[JoinPlan], object]) -> list[list[JoinPlan]]:
    groups: dict[object, list[JoinPlan]] = {}
    for plan in plans:
        groups.setdefault(key(plan), []).append(plan)
    return list(groups.values())
