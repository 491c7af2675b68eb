"""Stage 2 on Spark's executors with the population partitioned: the shared stage of
:class:`~feedrouter.join.stage.JoinStage`, one task per part of the join subscriptions.

A part is a set of whole value slices (:meth:`JoinStage.slices
<feedrouter.join.stage.JoinStage.slices>`: the subscriptions whose driving value join compares the
same leaf paths of the same feeds share its matches, paper 001's unit of shared work), so a part's
subscriptions get exactly the pairs the whole population's stage gives them, and no match is
enumerated twice unless a slice outweighs a part (it is then split by its groups of subscriptions
with the same blocks and value joins, which never split). The driver reads only the hour's own
witnesses (to find each subscription's driving join, as columns); each task reads the window's
witness hours from the state store itself, as columns (:func:`~feedrouter.spark.witnesses.
read_joinable`). The join stage's tasks then write their part's folders themselves
(:func:`partitioned_deliveries`): the pairs never leave the executors, and the driver receives a
ledger row per subscription. Asked for the pairs alone (:func:`partitioned_pairs`, what the
engines are compared on), a task sends them back in a few rows, each holding whole pair lists
(subscriptions with the same blocks, joins and temporal term share one) as numbers into the
row's distinct pairs: no row is made per (subscription, pair) on either side.

Where the Spark SQL engine (:mod:`feedrouter.spark.joinsql`) expresses each template as one
relational query, this engine runs the same set-at-a-time algorithm as the in-process engine
(NumPy arrays of node numbers per slice), in parallel: both give the same pairs (tests run them side
by side), and this one is the faster on every population measured (``bench/join_spark_bench.py``).
"""

from __future__ import annotations

import dataclasses
import heapq
import pickle
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from feedrouter import heap
from feedrouter.join.plan import JoinPlan
from feedrouter.join.stage import JoinStage, Pair, Slice
from feedrouter.limits import DEFAULT_MAX_JOIN_PAIRS, JoinLimits
from feedrouter.spark.joindelivery import DELIVERY_THREADS, Written, deliver_joins
from feedrouter.spark.joinsql import WitnessSource
from feedrouter.spark.session import executor_cores
from feedrouter.spark.spec import JobSpec

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from feedrouter.catalog import Target

#: A part's row as the tasks receive it: its number and its subscriptions' plans (with their
#: targets when the task delivers: :func:`_packed`), pickled, zlib.
PARTS = "part int, plans binary"
#: A part's pairs as its task sends them back, one row: each distinct pair list as the
#: subscriptions it is the list of and the numbers of its pairs, then the distinct pairs, each node
#: as (hour in seconds since the epoch, message number, element id).
PAIR_LISTS = (
    "sids array<array<string>>, pairs array<array<int>>, l_hour array<bigint>, l_message array<int>,"
    " l_node array<int>, r_hour array<bigint>, r_message array<int>, r_node array<int>"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: Parts when the session cannot say how many cores its executors have (a Spark Connect client).
_UNKNOWN_CORES_PARTS = 8


def partitioned_pairs(
    spark: SparkSession,
    plans: Sequence[JoinPlan],
    hour: datetime,
    source: WitnessSource,
    lateness: timedelta,
    max_pairs: int = DEFAULT_MAX_JOIN_PAIRS,
    parts: int | None = None,
) -> dict[str, list[Pair]]:
    """Every subscription's qualifying pairs delivered in ``hour`` (at most ``max_pairs + 1`` of
    one: past its cap it is withheld), computed by ``parts`` tasks (None: one per core of the
    session's executors)."""
    if not plans:
        return {}
    divided = _divided(spark, plans, hour, source, lateness, parts)
    frame = parts_frame(spark, [(number, _packed(part)) for number, part in enumerate(divided)])
    task = partial(pair_parts, source, hour, lateness, max_pairs)
    table = frame.mapInArrow(task, PAIR_LISTS).toArrow()
    with heap.paused(keep=True):  # millions of pairs, all kept
        return _unpacked(table, plans)


def partitioned_deliveries(
    spark: SparkSession,
    stage: JoinStage,
    hour: datetime,
    source: WitnessSource,
    spec: JobSpec,
    targets: Mapping[str, Target],
    threads: int = DELIVERY_THREADS,
    parts: int | None = None,
) -> list[Written]:
    """Every join subscription's folder of ``hour`` written by the tasks that pair its part (each
    task writes its own part's folders, ``threads`` at a time: the pairs never leave the
    executors); what each wrote, in no particular order. ``stage`` gives the plans, the lateness
    and the limits."""
    if not stage.plans:
        return []
    divided = _divided(spark, stage.plans, hour, source, stage.lateness, parts)
    packed = [
        (n, _packed(part, {plan.sid: targets[plan.sid] for plan in part})) for n, part in enumerate(divided)
    ]
    task = partial(deliver_parts, source, hour, stage.lateness, stage.limits, spec.without_targets(), threads)
    table = parts_frame(spark, packed).mapInArrow(task, WRITTEN).toArrow()
    return [pickle.loads(payload) for payload in table.column("written").to_pylist()]


def parts_frame(spark: SparkSession, rows: list[tuple[int, bytes]]) -> DataFrame:
    """The parts as a frame of :data:`PARTS`, one in each partition: each has a task of its own."""
    # by range, not by hash: hashing the part numbers put parts 0 and 1 of two in one partition,
    # and one task ran both
    return spark.createDataFrame(rows, PARTS).repartitionByRange(len(rows), "part")


def _divided(
    spark: SparkSession,
    plans: Sequence[JoinPlan],
    hour: datetime,
    source: WitnessSource,
    lateness: timedelta,
    parts: int | None,
) -> list[list[JoinPlan]]:
    """The population divided by value slice (:func:`divide`) into ``parts`` (None: one per core
    of the session's executors), the slices found from the hour's own witnesses."""
    read = source.hours().joinable
    own = {feed: read(feed, hour) for feed in {f for plan in plans for f in plan.feeds}}
    slices = JoinStage(plans, {}, lateness=lateness).slices(hour, lambda feed, when: own.get(feed))
    return divide(slices, parts or executor_cores(spark) or _UNKNOWN_CORES_PARTS)


def divide(slices: dict[Slice, list[JoinPlan]], parts: int) -> list[list[JoinPlan]]:
    """The slices' subscriptions in at most ``parts`` parts of about equal work: whole slices,
    heaviest first into the lightest part (a slice heavier than a part's share is split by its
    groups first). A slice's weight is its number of groups (subscriptions with the same blocks
    and value joins): each group takes its pairs from the slice's matches on its own."""
    grouped = {key: _groups(plans) for key, plans in slices.items()}
    share = max(1, -(-sum(map(len, grouped.values())) // max(1, parts)))
    units: list[tuple[int, list[JoinPlan]]] = []
    for key in sorted(grouped):
        units += _split(grouped[key], share)
    loads = [(0, number) for number in range(max(1, min(parts, len(units))))]
    divided: list[list[JoinPlan]] = [[] for _ in loads]
    for weight, plans in sorted(units, key=lambda unit: -unit[0]):
        load, number = heapq.heappop(loads)
        divided[number] += plans
        heapq.heappush(loads, (load + weight, number))
    return [part for part in divided if part]


def _groups(plans: list[JoinPlan]) -> list[list[JoinPlan]]:
    """A slice's subscriptions by group: the same blocks and value joins."""
    groups: dict[object, list[JoinPlan]] = {}
    for plan in plans:
        groups.setdefault((plan.blocks, plan.joins), []).append(plan)
    return list(groups.values())


def _split(groups: list[list[JoinPlan]], share: int) -> list[tuple[int, list[JoinPlan]]]:
    """A slice's groups as units of at most about ``share`` groups each (one unit when they fit),
    each with its number of groups."""
    pieces = -(-len(groups) // share)
    units: list[tuple[int, list[JoinPlan]]] = [(0, []) for _ in range(pieces)]
    for number, group in enumerate(groups):
        weight, members = units[number % pieces]
        members += group
        units[number % pieces] = (weight + 1, members)
    return units


def pair_parts(
    source: WitnessSource,
    hour: datetime,
    lateness: timedelta,
    max_pairs: int,
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` task: the shared stage over each part's subscriptions, the window's
    witness hours read from the state store as columns (each once per task), a part's pairs in
    rows of bounded size (:func:`_pair_lists`)."""
    read = source.hours().joinable
    for batch in batches:
        for packed in batch.column("plans").to_pylist():
            with heap.paused():  # tens of thousands of plans, millions of pairs: none garbage yet
                stage = JoinStage(
                    _plans(packed), {}, lateness=lateness, limits=JoinLimits(pairs_per_hour=max_pairs)
                )
                rows = list(_pair_lists(stage.pairs(hour, read)))
            yield from rows


def deliver_parts(
    source: WitnessSource,
    hour: datetime,
    lateness: timedelta,
    limits: JoinLimits,
    spec: JobSpec,
    threads: int,
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` task of :func:`partitioned_deliveries`: each part's pairs (as
    :func:`pair_parts` finds them), then its subscriptions' folders written from them
    (:func:`~feedrouter.spark.joindelivery.deliver_joins`), one :data:`WRITTEN` row each. The
    window's witness hours are read once per task, as columns to pair and with their fragments
    to deliver."""
    import pyarrow as pa

    witnesses = source.hours()
    schema = pa.schema([("written", pa.binary())])
    for batch in batches:
        for packed in batch.column("plans").to_pylist():
            plans, targets = _unpacked_part(packed)
            stage = JoinStage(plans, {}, lateness=lateness, limits=limits)
            with heap.paused():  # tens of thousands of plans, millions of pairs: none garbage yet
                pairs = stage.pairs(hour, witnesses.joinable)
            witnesses.forget_joinable()  # paired: only what delivering reads is kept
            witnesses.expect(stage.messages_needed(pairs))
            found = stage.deliveries(hour, witnesses.read, pairs)
            by_sid = {plan.sid: plan for plan in plans}
            written = deliver_joins(spec, targets, by_sid, found, witnesses, threads)
            payloads = [pickle.dumps(one, protocol=pickle.HIGHEST_PROTOCOL) for one in written]
            for start in range(0, len(payloads), _WRITTEN_ROWS):
                rows = pa.array(payloads[start : start + _WRITTEN_ROWS], pa.binary())
                yield pa.RecordBatch.from_arrays([rows], schema=schema)


def _pair_lists(found: dict[str, list[Pair]], most: int = 1 << 21) -> Iterator[pa.RecordBatch]:
    """A part's pairs as Arrow rows of about ``most`` list entries at most (a row holds at least
    one whole list): each row its distinct pairs as columns, and each of its pair lists as the
    subscriptions sharing it and the numbers of its pairs; a pair many lists of a row hold is
    sent once."""
    lists: dict[int, tuple[list[Pair], list[str]]] = {}
    for sid, pairs in found.items():
        if pairs:
            lists.setdefault(id(pairs), (pairs, []))[1].append(sid)
    seconds: dict[datetime, int] = {}
    row: list[tuple[list[Pair], list[str]]] = []
    entries = 0
    for pairs, sids in lists.values():
        if row and entries + len(pairs) > most:
            yield _row(row, seconds)
            row, entries = [], 0
        row.append((pairs, sids))
        entries += len(pairs)
    if row:
        yield _row(row, seconds)


def _row(lists: list[tuple[list[Pair], list[str]]], seconds: dict[datetime, int]) -> pa.RecordBatch:
    """One row of :data:`PAIR_LISTS`: the lists' distinct pairs, and each list's numbers of them."""
    import pyarrow as pa

    numbers: dict[int, int] = {}  # by id: the stage makes a pair's tuple once, whatever lists hold it
    distinct: list[Pair] = []
    indexes = []
    for pairs, _ in lists:
        mine = []
        for pair in pairs:
            number = numbers.setdefault(id(pair), len(numbers))
            if number == len(distinct):
                distinct.append(pair)
            mine.append(number)
        indexes.append(mine)
    sides = []
    for side in zip(*distinct, strict=True):
        hours, messages, nodes = zip(*side, strict=True)
        sides += [[_seconds(when, seconds) for when in hours], list(messages), list(nodes)]
    columns = [[sids for _, sids in lists], indexes, *sides]
    schema = _schema()
    arrays = [pa.array([column], field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _unpacked(table: pa.Table, plans: Sequence[JoinPlan]) -> dict[str, list[Pair]]:
    """Every subscription's pairs from the parts' rows (a subscription with none: empty); no part
    with pairs sends no row."""
    import numpy as np

    found: dict[str, list[Pair]] = {plan.sid: [] for plan in plans}
    hours: dict[int, datetime] = {}
    for row in table.to_batches(max_chunksize=1):
        if not row.num_rows:
            continue
        # flatten(), never .values: a row of a table is a slice, and .values ignores the slice
        side = [row.column(name).flatten().to_numpy(zero_copy_only=False).tolist() for name in _PAIR_COLUMNS]
        lefts = zip([_hour(s, hours) for s in side[0]], side[1], side[2], strict=True)
        rights = zip([_hour(s, hours) for s in side[3]], side[4], side[5], strict=True)
        distinct = np.empty(len(side[0]), object)
        distinct[:] = list(zip(lefts, rights, strict=True))
        sids = row.column("sids").flatten()  # one list of subscriptions per pair list
        pairs = row.column("pairs").flatten()
        numbers = pairs.flatten().to_numpy()
        offsets = pairs.offsets.to_numpy() - pairs.offsets[0].as_py()
        for number, names in enumerate(sids.to_pylist()):
            shared = distinct[numbers[offsets[number] : offsets[number + 1]]].tolist()
            for sid in names:
                found[sid] = shared  # one list, as the in-process stage shares it
    return found


def _packed(plans: list[JoinPlan], targets: dict[str, Target] | None = None) -> bytes:
    """A part's plans as its task receives them: what pairing reads of each, and when the task
    delivers too (``targets``: where each subscription's folder goes), its return code; by field
    (a dataclass pickled whole costs tens of microseconds to load, and a task loads tens of
    thousands), each distinct value once (subscriptions share blocks, joins, windows and
    templates: pickle writes an object it has seen as a reference; measured on D, a sixth of the
    bytes and half the time)."""
    fields = _SHIPPED if targets is None else (*_SHIPPED, "code")
    seen: dict[object, object] = {}
    rows = [
        (plan.sid, *(seen.setdefault(value, value) for value in map(plan.__getattribute__, fields[1:])))
        for plan in plans
    ]
    return zlib.compress(pickle.dumps((fields, rows, targets), protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpacked_part(packed: bytes) -> tuple[list[JoinPlan], dict[str, Target]]:
    """A part's plans (with no code unless it was shipped) and its targets (none: pairing only)."""
    # our own bytes, made by this job's driver from its plan build (never from a document)
    fields, rows, targets = pickle.loads(zlib.decompress(packed))
    plans = []
    for row in rows:
        given: dict[str, Any] = {"code": (), **dict(zip(fields, row, strict=True))}
        plans.append(JoinPlan(**given))
    return plans, targets or {}


def _plans(packed: bytes) -> list[JoinPlan]:
    return _unpacked_part(packed)[0]


#: The fields of a plan a task receives to pair (the others keep their defaults: no code, no
#: notes): its id, then those that many plans share.
_SHARED = tuple(
    field.name for field in dataclasses.fields(JoinPlan) if field.name not in ("sid", "code", "notes")
)
_SHIPPED = ("sid", *_SHARED)
#: What a delivering task sends back per subscription: its :class:`Written`, pickled (small).
WRITTEN = "written binary"
#: :data:`WRITTEN` rows per Arrow batch a task yields.
_WRITTEN_ROWS = 4096


def _schema() -> pa.Schema:
    """:data:`PAIR_LISTS` in Arrow."""
    import pyarrow as pa

    kinds = [pa.int64(), pa.int32(), pa.int32()] * 2
    sides = [(name, pa.list_(kind)) for name, kind in zip(_PAIR_COLUMNS, kinds, strict=True)]
    lists = [("sids", pa.list_(pa.list_(pa.string()))), ("pairs", pa.list_(pa.list_(pa.int32())))]
    return pa.schema([*lists, *sides])


#: A part's distinct pairs, by column.
_PAIR_COLUMNS = ("l_hour", "l_message", "l_node", "r_hour", "r_message", "r_node")


def _seconds(when: datetime, known: dict[datetime, int]) -> int:
    found = known.get(when)
    if found is None:
        found = known[when] = int((when - _EPOCH).total_seconds())
    return found


def _hour(seconds: int, known: dict[int, datetime]) -> datetime:
    found = known.get(seconds)
    if found is None:
        found = known[seconds] = datetime.fromtimestamp(seconds, timezone.utc)
    return found
