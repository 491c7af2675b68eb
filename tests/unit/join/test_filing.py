"""Filing an hour's witness rows by block where the join stage reads it (the state's format 2)."""

from __future__ import annotations

import pickle
import random
import sys
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from feedrouter import Router, kernel
from feedrouter.join import filing, selections
from feedrouter.join.filing import BlockFiling
from feedrouter.join.plan import BlockSpec
from feedrouter.join.relations import HourWitnesses, MessageRef, message_rows
from feedrouter.join.selections import WitnessPlans, witness_plans
from feedrouter.spark.witnesses import coverage, read_hour, read_joinable, read_relation, write_hour
from feedrouter.storage import ObjectStore, open_store
from tests.unit.join.test_selections import ITEM_PARTS, block, generated_blocks

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)


def message_ref(number: int) -> MessageRef:
    return MessageRef("m", number, HOUR + timedelta(seconds=number))


def generated_items(rng: random.Random) -> bytes:
    """Items as the selection tests make them, but a child may come twice with the same text (a
    string test of a leaf with two values is false, however alike they are)."""
    lang = rng.choice(["", ' lang="de"', ' lang="en"'])
    parts = "".join(rng.choices(ITEM_PARTS, k=rng.randint(0, 6)))
    other = "".join(rng.sample(ITEM_PARTS, rng.randint(0, 4)))
    return f"<rss><channel><item{lang}>{parts}</item><item>{other}</item></channel></rss>".encode()


def routed(plans: WitnessPlans, documents: list[bytes]) -> list[dict]:
    router = Router()
    for spec in plans.bases.values():
        router.add_witness(spec)
    return [router.route_outcome(document).witnesses for document in documents]


def hour_filed_in_stage_1(
    plans: WitnessPlans, witnesses: list[dict], blocks: tuple[str, ...]
) -> HourWitnesses:
    hour = HourWitnesses("f", HOUR, blocks)
    for number, found in enumerate(witnesses):
        hour.add(message_ref(number), found, plans)
    return hour


def hour_of_plan_rows(plans: WitnessPlans, witnesses: list[dict], blocks: tuple[str, ...]) -> HourWitnesses:
    hour = HourWitnesses("f", HOUR, blocks)
    for number, found in enumerate(witnesses):
        hour.append(message_rows(message_ref(number), found, plans))
    return hour


def roots_read(path: Path, specs: list[BlockSpec], hour: HourWitnesses, roots: dict[str, str] | None):
    store = open_store(path.as_uri())
    write_hour(store, hour, coverage(specs), roots)
    return roots_in_store(store, specs)


def roots_in_store(store: ObjectStore, specs: list[BlockSpec]) -> dict[str, list[tuple[int, int]]]:
    """Per block of ``specs``, its roots in the stored hour as the in-process engines read them
    (and Spark SQL's executors, checked to agree)."""
    filing = BlockFiling({spec.id: spec for spec in specs})
    joinable = read_joinable(store, "f", HOUR, filing)
    assert joinable is not None
    runs = joinable._columns.roots  # type: ignore[union-attr]
    by_block = {
        name: list(
            zip(
                runs.messages[runs.starts[at] : runs.starts[at + 1]].tolist(),
                runs.nodes[runs.starts[at] : runs.starts[at + 1]].tolist(),
                strict=True,
            )
        )
        for at, name in enumerate(runs.names)
    }
    relation = read_relation(store, "f", HOUR, "roots", filing)
    assert relation is not None
    assert sorted(
        zip(*(relation.column(c).to_pylist() for c in ("block", "message", "node")), strict=True)
    ) == sorted((block, m, n) for block, nodes in by_block.items() for m, n in nodes)
    return by_block


@pytest.fixture(params=["compiled", "python"])
def filing_loops(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows filed by the compiled kernel's loops where it is built, and by the Python reference."""
    if request.param == "python":
        for name in ("Tests", "bind", "file_rows", "file_messages", "fill_items", "count_items"):
            monkeypatch.setattr(kernel, name, None)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.usefixtures("filing_loops")
def test_an_hour_of_plan_rows_filed_where_it_is_read_binds_what_stage_1_filing_binds(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Format 2 (stage 1 writes each witness plan's rows whole, the join stage files them by block
    as it reads the hour) gives every block the roots format 1 gives (filed in stage 1), and those
    each block's own plan binds: through the store, as the in-process engines and Spark SQL's
    executors read it."""
    monkeypatch.setattr(selections, "HOT", seed % 2 * selections.HOT)  # buckets cold, or hot at once
    rng = random.Random(seed)
    specs = generated_blocks(rng, 60)
    documents = [generated_items(rng) for _ in range(80)]
    blocks = tuple(sorted(spec.id for spec in specs))
    factored = witness_plans(specs, min_shared=1)
    assert len(factored.bases) < len(specs) // 2  # most blocks share a base
    one_by_one = witness_plans(specs, min_shared=sys.maxsize)
    witnesses = routed(factored, documents)
    roots = factored.roots()
    assert set(roots) == set(blocks) and set(roots.values()) == set(factored.bases)

    expected = roots_read(
        tmp_path / "own",
        specs,
        hour_filed_in_stage_1(one_by_one, routed(one_by_one, documents), blocks),
        None,
    )
    in_stage_1 = roots_read(tmp_path / "v1", specs, hour_filed_in_stage_1(factored, witnesses, blocks), None)
    at_read = roots_read(tmp_path / "v2", specs, hour_of_plan_rows(factored, witnesses, blocks), roots)
    assert at_read == in_stage_1 == expected
    assert sum(map(len, at_read.values())) > 500  # blocks bound nodes in most documents


def test_a_format_2_hour_is_filed_by_the_blocks_the_join_reads(tmp_path: Path) -> None:
    """Blocks the filing does not know are left out (another feed's joins), and reading an hour of
    format 2 without the join's blocks is refused rather than read as blocks' roots."""
    rng = random.Random(7)
    specs = generated_blocks(rng, 40)
    plans = witness_plans(specs, min_shared=1)
    documents = [generated_items(rng) for _ in range(30)]
    blocks = tuple(sorted(spec.id for spec in specs))
    hour = hour_of_plan_rows(plans, routed(plans, documents), blocks)
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour, coverage(specs), plans.roots())
    some = specs[: len(specs) // 2]
    read = read_joinable(store, "f", HOUR, BlockFiling({spec.id: spec for spec in some}))
    assert read is not None
    assert set(read._columns.roots.names) <= {spec.id for spec in some}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"format 2\): reading them needs the join's blocks"):
        read_joinable(store, "f", HOUR)
    with pytest.raises(ValueError, match=r"witness plans' \(format 2\): read_joinable files them"):
        read_hour(store, "f", HOUR)  # as the blocks' own roots
    back = read_hour(store, "f", HOUR, ("messages", "values", "fragments"))
    assert back is not None and len(back.messages) == 30 and back.values


def test_a_process_builds_a_base_once_for_every_filing_that_files_by_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spark's executors unpickle a new filing for each task that reads witness hours: the bases
    are kept by the process (a block's id names its text) as well as by the filing, as many as
    :data:`~feedrouter.join.filing.KEPT_BASES`, the least recently used dropped first (a filing
    keeps its own for the hours it files)."""
    monkeypatch.setattr(filing, "_BUILT", OrderedDict())
    monkeypatch.setattr(filing, "KEPT_BASES", 2)
    built: list[tuple[str, ...]] = []
    real = filing.shared_base

    def counted(specs: list[BlockSpec]) -> tuple[BlockSpec, selections.Served]:
        built.append(tuple(spec.id for spec in specs))
        return real(specs)

    monkeypatch.setattr(filing, "shared_base", counted)
    specs = generated_blocks(random.Random(11), 12)
    first = BlockFiling({spec.id: spec for spec in specs})
    groups = [tuple(sorted(spec.id for spec in specs[at : at + 4])) for at in (0, 4, 8)]
    base = first._base(groups[0])
    task = pickle.loads(pickle.dumps(first))  # what a task's executor gets
    assert task._base(groups[0]) is base and built == [groups[0]]
    task._base(groups[1])
    pickle.loads(pickle.dumps(first))._base(groups[0])  # another task's: the most recent
    task._base(groups[2])  # a third: the least recently used goes
    assert list(filing._BUILT) == [groups[0], groups[2]]
    pickle.loads(pickle.dumps(first))._base(groups[1])
    assert built == [groups[0], groups[1], groups[2], groups[1]]
    assert len(filing._BUILT) == 2


def test_a_block_added_later_is_filed_from_the_plan_rows_an_hour_keeps(tmp_path: Path) -> None:
    """A join subscription added after an hour was routed needs its blocks there. Where the hour
    keeps its witness plans' rows whole (format 2) and records what they hold, a block whose plan
    holds what filing it needs is covered by rewriting ``blocks.json`` alone: read back, its roots
    are those of the hour routed again with it. A block that reads a leaf the plan's rows do not
    hold cannot be, and then nothing is rewritten (the hour is routed again)."""
    from feedrouter.spark.witnesses import adopt_blocks, adopt_some_blocks, coverage_of_hour, plan_coverage

    earlier = [
        block("//item"),
        block("//item", '$a/author = "A1"'),
        block("//item", '$a/category = "c1"'),
        block('//item[@lang = "de"]'),
    ]
    added = [block("//item", '$a/author = "A2"'), block("//item", 'not($a/category = "c2")')]
    rng = random.Random(5)
    documents = [generated_items(rng) for _ in range(60)]

    def written(path: Path, specs: list[BlockSpec]) -> ObjectStore:
        plans = witness_plans(specs, min_shared=1)
        assert len(plans.bases) == 1  # one base serves them all
        hour = hour_of_plan_rows(plans, routed(plans, documents), tuple(sorted(s.id for s in specs)))
        store = open_store(path.as_uri())
        write_hour(store, hour, coverage(specs), plans.roots(), plan_coverage(plans))
        return store

    def adopt(store: ObjectStore, specs: list[BlockSpec]) -> tuple[str, ...] | None:
        return adopt_blocks(store, "f", HOUR, specs, witness_plans(specs, min_shared=1).roots())

    store = written(tmp_path / "earlier", earlier)
    assert adopt(store, earlier) == ()  # nothing lacking: nothing rewritten
    everything = [*earlier, *added]
    assert set(adopt(store, everything) or ()) == {spec.id for spec in added}
    found = coverage_of_hour(store, "f", HOUR)
    assert found is not None and found[0] == {spec.id for spec in everything}
    again = roots_in_store(written(tmp_path / "routed again", everything), everything)
    assert roots_in_store(store, everything) == again
    assert all(again[spec.id] for spec in added)  # the added blocks bind nodes
    # what the hour says now is what writing it with the added blocks filed so says, byte for byte
    plans = witness_plans(earlier, min_shared=1)
    filed_so = {**plans.roots(), **{spec.id: plans.roots()[earlier[0].id] for spec in added}}
    hour = hour_of_plan_rows(plans, routed(plans, documents), tuple(sorted(s.id for s in everything)))
    direct = open_store((tmp_path / "direct").as_uri())
    write_hour(direct, hour, coverage(everything), filed_so, plan_coverage(plans))
    key = "witnesses/f/dt=2026-05-01/hour=08/blocks.json"
    assert store.get(key) == direct.get(key)

    reading_more = [*everything, block("//item", '$a/ticker = "T"')]  # ticker: not in the rows
    before = store.get("witnesses/f/dt=2026-05-01/hour=08/blocks.json")
    assert adopt(store, reading_more) is None
    assert store.get("witnesses/f/dt=2026-05-01/hour=08/blocks.json") == before
    # block by block: what can be covered is (its joins pair should the hour's inputs be gone),
    # the rest is left to routing the hour again
    partly = written(tmp_path / "partly", earlier)
    roots = witness_plans(reading_more, min_shared=1).roots()
    covered, left = adopt_some_blocks(partly, "f", HOUR, reading_more, roots) or ((), ())
    assert set(covered) == {spec.id for spec in added} and left == (reading_more[-1].id,)
    assert partly.get(key) == store.get(key)  # as if the added blocks alone had been adopted
    # an hour of format 2 that does not record what its plans' rows hold: routed again
    plans = witness_plans(earlier, min_shared=1)
    hour = hour_of_plan_rows(plans, routed(plans, documents), tuple(sorted(s.id for s in earlier)))
    bare = open_store((tmp_path / "bare").as_uri())
    write_hour(bare, hour, coverage(earlier), plans.roots())
    assert adopt(bare, everything) is None


def test_an_hour_whose_blocks_code_factored_otherwise_is_back_filled_not_misread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hours outlive the code that wrote them. Where the code reading a format-2 hour factors a
    block otherwise than the code that wrote it (here: ``matches`` becomes a test a base's rows
    decide), the block's plan in the hour holds other nodes or lacks a leaf the tests read: the
    join stage takes the hour as one lacking the block (it is routed again), and filing it is
    refused, naming the block, rather than binding the wrong nodes."""
    from feedrouter.errors import WitnessesUnreadable
    from feedrouter.spark.witnesses import adopt_blocks, blocks_json_of_hour, holds, misfiled, plan_coverage

    specs = [block('//item[matches(category, "c")]'), block('//item[matches(category, "c")][author = "A1"]')]
    plans = witness_plans(specs, min_shared=1)
    documents = [b"<rss><item><category>c1</category><author>A1</author><title>t</title></item></rss>"]
    hour = hour_of_plan_rows(plans, routed(plans, documents), tuple(sorted(s.id for s in specs)))
    store = open_store(tmp_path.as_uri())
    write_hour(store, hour, coverage(specs), plans.roots(), plan_coverage(plans))
    found = blocks_json_of_hour(store, "f", HOUR)
    assert found is not None and holds(found, specs) and not misfiled(found, specs)
    assert roots_in_store(store, specs)[specs[1].id] == [(0, 1)]

    monkeypatch.setattr(selections, "_STRING_MATCHES", (*selections._STRING_MATCHES, "matches"))
    monkeypatch.setattr(selections, "_FILED_FROM", {})
    monkeypatch.setattr(filing, "_BUILT", OrderedDict())
    assert misfiled(found, specs) == [specs[1].id] and not holds(found, specs)
    with pytest.raises(WitnessesUnreadable, match=rf"block {specs[1].id} is filed from witness plan"):
        read_joinable(store, "f", HOUR, BlockFiling({spec.id: spec for spec in specs}))
    # its plan now is a base the hour has no rows of: routed again, nothing rewritten
    assert adopt_blocks(store, "f", HOUR, specs, witness_plans(specs, min_shared=1).roots()) is None
    # where it cannot be (its inputs gone), the joins of the other block are paired: filed by the
    # blocks they read alone, the hour reads (a review found it failing every join with FR611)
    from feedrouter.catalog.joins import JoinsOfFeed
    from feedrouter.spark.joins import without
    from tests.unit.join.support import join_set

    joins = join_set(
        'for $a in fr:stream()//item[matches(category, "c")], $b in fr:stream()//item[matches(category, "c")]'
        " where $a/title = $b/title and fr:within($a, $b, 'PT1H') return <p/>",
        'for $a in fr:stream()//item[matches(category, "c")][author = "A1"], $b in fr:stream()//item'
        " where $a/title = $b/title and fr:within($a, $b, 'PT1H') return <p/>",
    )
    of_feed = JoinsOfFeed(plans=dict(joins.plans), specs=dict(joins.specs), blocks=tuple(joins.specs))
    kept = without(of_feed, {"s1"})
    assert set(kept.plans) == {"s0"} and set(kept.specs) == {specs[0].id}
    read = read_joinable(store, "f", HOUR, BlockFiling(kept.specs))
    assert read is not None and read.arrays().blocks[specs[0].id].tolist() == [0]
