"""The partitioned join engine's parts, without Spark: how the population is divided, what a task
receives and sends back, and a task's pairs against the in-process stage's."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from feedrouter.catalog import Target
from feedrouter.delivery import PlanRef
from feedrouter.join.plan import JoinPlan
from feedrouter.join.stage import JoinStage, Pair
from feedrouter.limits import JoinLimits
from feedrouter.spark.joindelivery import Written, deliver_joins
from feedrouter.spark.joinparts import (
    _packed,
    _pair_lists,
    _plans,
    _unpacked,
    deliver_parts,
    divide,
    pair_parts,
)
from feedrouter.spark.joinsql import WitnessSource
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import WitnessHours, write_hour
from feedrouter.storage import open_store
from tests.unit.join.support import bound_hour, join_set

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
LATENESS = timedelta(hours=1)
WITHIN = "fr:within($a, $b, 'PT2H')"
ITEMS = "$b in fr:stream()//item where"
QUERIES = [
    # slice (k, k): three groups (blocks, joins), one of them two subscriptions
    f"for $a in fr:stream()//item, {ITEMS} $a/k = $b/k and {WITHIN} return <p/>",
    f"for $a in fr:stream()//item, {ITEMS} $a/k = $b/k and {WITHIN} return <q/>",
    f"for $a in fr:stream()//item[c = 'x'], {ITEMS} $a/k = $b/k and {WITHIN} return <p/>",
    f"for $a in fr:stream()//item[c = 'y'], {ITEMS} $a/k = $b/k and {WITHIN} return <p/>",
    # slice (c, c): one group
    f"for $a in fr:stream()//item, {ITEMS} $a/c = $b/c and {WITHIN} return <p/>",
]
LEAVES = [
    {"k": ("1",), "c": ("x",)},
    {"k": ("1",), "c": ("y",)},
    {"k": ("2",), "c": ("x",)},
    {"k": ("1",), "c": ("x",)},
]


def by_slice(plans: list[JoinPlan]) -> dict:
    found: dict = {}
    for plan in plans:
        found.setdefault((plan.feeds, plan.joins[0]), []).append(plan)
    return found


def test_the_population_is_divided_by_whole_slices_and_whole_groups() -> None:
    plans = list(join_set(*QUERIES).plans.values())
    slices = by_slice(plans)
    for parts in (1, 2, 3, 10):
        divided = divide(slices, parts)
        assert 1 <= len(divided) <= parts
        assert sorted(plan.sid for part in divided for plan in part) == sorted(plan.sid for plan in plans)
        # a group (same blocks and joins) is never split: its subscriptions share its pairs
        homes = {}
        for number, part in enumerate(divided):
            for plan in part:
                assert homes.setdefault((plan.blocks, plan.joins), number) == number
    # slices that fit a part's share stay whole: no match of theirs is enumerated twice
    fitting = [plan for plan in plans if plan.sid in ("s0", "s1", "s4")]
    two = divide(by_slice(fitting), 2)
    assert sorted(sorted(plan.sid for plan in part) for part in two) == [["s0", "s1"], ["s4"]]
    # the (k, k) slice, three of the four groups, outweighs half: split by its groups, two a part
    halves = divide(slices, 2)
    assert sorted(len({(p.blocks, p.joins) for p in part}) for part in halves) == [2, 2]


def test_a_task_receives_what_pairing_reads_of_each_plan() -> None:
    plans = list(join_set(*QUERIES).plans.values())
    back = _plans(_packed(plans))
    for plan, received in zip(plans, back, strict=True):
        assert received.key == plan.key and received.sid == plan.sid and received.feeds == plan.feeds
        assert received.reach(LATENESS) == plan.reach(LATENESS) and received.template == plan.template
        assert received.code == () and plan.code  # the return is delivery's, done by the driver


def test_pair_lists_travel_once_each_and_come_back_shared() -> None:
    """Lists shared by several subscriptions and pairs shared by several lists are sent once; the
    driver gives back one list per pair list, to each of its subscriptions; several parts' rows
    (slices of one table) each read their own pairs."""
    node = lambda minute, message: (HOUR + timedelta(hours=minute), message, 1)  # noqa: E731
    first: list[Pair] = [(node(0, 0), node(0, 1)), (node(0, 0), node(0, 2))]
    second: list[Pair] = [first[1], (node(-1, 3), node(0, 0))]
    parts = [{"a": first, "b": first, "c": second, "d": []}, {"e": [(node(-2, 5), node(0, 7))], "f": []}]
    # one chunk: the rows are slices of its arrays (reading a row's own part of them is the point)
    table = pa.Table.from_batches([batch for found in parts for batch in _pair_lists(found)]).combine_chunks()
    assert table.num_rows == 2
    row = table.slice(0, 1).to_pylist()[0]
    assert row["sids"] == [["a", "b"], ["c"]] and row["pairs"] == [[0, 1], [1, 2]]  # the shared pair once
    plans = [_plan_named(sid) for sid in "abcdefg"]
    back = _unpacked(table, plans)
    expected = {"a": first, "b": first, "c": second, "d": [], "e": parts[1]["e"], "f": [], "g": []}
    assert back == expected and back["a"] is back["b"]
    # rows bounded by their entries: each holds whole lists, with its own distinct pairs
    small = pa.Table.from_batches([b for found in parts for b in _pair_lists(found, most=1)]).combine_chunks()
    assert small.num_rows == 3 and small.slice(1, 1).to_pylist()[0]["pairs"] == [[0, 1]]
    assert _unpacked(small, plans) == expected


def test_a_task_gives_its_parts_the_pairs_of_the_whole_population(tmp_path: Path) -> None:
    joins = join_set(*QUERIES)
    plans = list(joins.plans.values())
    earlier, hour = (
        bound_hour(joins, HOUR - timedelta(hours=1), LEAVES),
        bound_hour(joins, HOUR, LEAVES[::-1]),
    )
    store = open_store(tmp_path.as_uri())
    for witnesses in (earlier, hour):
        write_hour(store, witnesses)
    read = {(w.feed, w.hour): w for w in (earlier, hour)}
    whole = JoinStage(plans, joins.specs, lateness=LATENESS).pairs(HOUR, lambda f, h: read.get((f, h)))
    assert sum(map(len, whole.values())) >= 10  # not a comparison of empty lists
    divided = divide(by_slice(plans), 2)
    batch = pa.RecordBatch.from_pylist(
        [{"part": number, "plans": _packed(part)} for number, part in enumerate(divided)],
        schema=pa.schema([("part", pa.int32()), ("plans", pa.binary())]),
    )
    source = WitnessSource(StoreOpener(), tmp_path.as_uri())
    rows = list(pair_parts(source, HOUR, LATENESS, 100_000, [batch]))
    assert _unpacked(pa.Table.from_batches(rows), plans) == whole


def _plan_named(sid: str) -> JoinPlan:
    plan = next(iter(join_set(QUERIES[0]).plans.values()))
    plan.sid = sid
    return plan


@pytest.mark.parametrize(("cap", "status"), [(100, "delivered"), (20, "withheld")])
def test_tasks_write_their_parts_folders_as_the_driver_writes_the_whole_populations(
    tmp_path: Path, cap: int, status: str
) -> None:
    """The partitioned engine's tasks deliver their own parts: every subscription's folder holds
    the bytes, and its ledger row the counts and digest, that delivering the whole population's
    pairs in one process gives."""
    joins = join_set(*QUERIES)
    plans = list(joins.plans.values())
    state = open_store((tmp_path / "state").as_uri())
    for witnesses in (
        bound_hour(joins, HOUR - timedelta(hours=1), LEAVES),
        bound_hour(joins, HOUR, LEAVES[::-1]),
    ):
        write_hour(state, witnesses)
    source = WitnessSource(StoreOpener(), state.uri)
    limits = JoinLimits(pairs_per_hour=cap)
    stage = JoinStage(plans, joins.specs, lateness=LATENESS, limits=limits)  # 26 pairs each
    spec = JobSpec("f", HOUR, "", None, PlanRef(3, "d" * 64, 7), StoreOpener(), 1 << 20, 1 << 20)

    def targets(root: str) -> dict[str, Target]:
        out = (tmp_path / root).as_uri()
        return {plan.sid: Target(n, f"sub{n}", "alice", out) for n, plan in enumerate(plans, 1)}

    witnesses = WitnessHours(state)
    pairs = stage.pairs(HOUR, witnesses.joinable)
    found = stage.deliveries(HOUR, witnesses.read, pairs)
    whole = deliver_joins(spec, targets("one"), joins.plans, found, witnesses)
    assert {one.row.status for one in whole} == {status}
    assert {one.pairs for one in whole} == {min(26, cap + 1)}  # a withheld one's count stops past its cap

    divided = divide(by_slice(plans), 2)
    parted = targets("parts")
    batch = pa.RecordBatch.from_pylist(
        [
            {"part": n, "plans": _packed(part, {p.sid: parted[p.sid] for p in part})}
            for n, part in enumerate(divided)
        ],
        schema=pa.schema([("part", pa.int32()), ("plans", pa.binary())]),
    )
    rows = list(deliver_parts(source, HOUR, LATENESS, limits, spec, 2, [batch]))
    written = [pickle.loads(p) for p in pa.Table.from_batches(rows).column("written").to_pylist()]

    def comparable(one: Written) -> tuple:
        row = one.row
        keys = tuple(key.rsplit("/", 3)[-3:][0] + "/" + key.rsplit("/", 1)[-1] for key in row.object_keys)
        return (one.sid, one.pairs, row.status, row.result_count, row.bytes, row.digest, keys)

    assert sorted(map(comparable, written)) == sorted(map(comparable, whole))
    tree = lambda root: {  # noqa: E731
        str(path.relative_to(tmp_path / root)): path.read_bytes()
        for path in (tmp_path / root).rglob("*")
        if path.is_file()
    }
    assert tree("parts") == tree("one") and (len(tree("one")) > 3) == (status == "delivered")
