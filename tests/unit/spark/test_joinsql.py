"""The Spark SQL join engine's session handling, on a fake session, and its executors' reading of
witness hours (the queries themselves run on real Spark in tests/integration/test_join_pipeline.py
and test_spark_connect.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from feedrouter.spark import joinsql
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import write_hour
from feedrouter.storage import open_store
from tests.unit.join.support import bound_hour, join_set


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str:
        return self.values[key]

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


class _Context:
    defaultParallelism = 3


class _Classic:
    def __init__(self, shuffles: str = "200") -> None:
        self.conf = _Conf({"spark.sql.shuffle.partitions": shuffles})
        self.sparkContext = _Context()


class _Connect:
    """A Connect client's session: no SparkContext to ask for the cores."""

    def __init__(self) -> None:
        self.conf = _Conf({"spark.sql.shuffle.partitions": "200"})

    @property
    def sparkContext(self) -> Any:
        raise RuntimeError("[NOT_SUPPORTED_WITH_SPARK_CONNECT] sparkContext")


def test_shuffles_follow_the_cores_while_the_stage_runs_then_the_default_comes_back() -> None:
    spark = _Classic()
    with joinsql._sized_shuffles(spark):  # type: ignore[arg-type]
        assert spark.conf.get("spark.sql.shuffle.partitions") == "6"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "200"


def test_shuffles_are_given_back_when_the_stage_fails() -> None:
    spark = _Classic()
    with pytest.raises(ValueError), joinsql._sized_shuffles(spark):  # type: ignore[arg-type]
        raise ValueError("a query failed")
    assert spark.conf.get("spark.sql.shuffle.partitions") == "200"


@pytest.mark.parametrize("spark", [_Classic("16"), _Connect()], ids=["set by its owner", "connect"])
def test_a_setting_of_the_sessions_owner_or_an_unknown_cluster_is_left_alone(spark: Any) -> None:
    before = spark.conf.get("spark.sql.shuffle.partitions")
    with joinsql._sized_shuffles(spark):
        assert spark.conf.get("spark.sql.shuffle.partitions") == before


def test_the_executors_read_blocks_and_leaves_by_number_leaving_out_those_no_subscription_uses(
    tmp_path: Path,
) -> None:
    """The relations carry a block or leaf path by its number in the run's :class:`Numbers`; the
    rows of a block or leaf none of the run's subscriptions uses (a subscription since removed, a
    leaf only a removed one compared) are not read into Spark."""
    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item[@lang] where $a/k = $b/k"
        " and fr:within($a, $b, 'PT1H') return <p/>",
        "for $a in fr:stream()//entry, $b in fr:stream()//entry where $a/j = $b/j"
        " and fr:within($a, $b, 'PT1H') return <p/>",
    )
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    witnesses = bound_hour(joins, hour, [{"k": (f"k{number}",), "j": ("j",)} for number in range(3)])
    uri = f"file://{tmp_path}/state"
    write_hour(open_store(uri), witnesses)
    kept = [joins.plans["s0"]]  # s1 removed since the hour was written
    numbers = joinsql.Numbers.of(kept)
    assert numbers.leaves == ("k",) and set(numbers.blocks) == set(kept[0].blocks)
    source = joinsql.WitnessSource(StoreOpener(), uri)
    listing = pa.RecordBatch.from_pydict(
        {"feed": ["f"], "hour_s": [int(hour.timestamp())]},
        schema=pa.schema([("feed", pa.string()), ("hour_s", pa.int64())]),
    )

    def read(name: str) -> list[dict[str, Any]]:
        batches = joinsql.read_window(source, name, numbers, [listing])
        return pa.Table.from_batches(list(batches)).to_pylist()

    roots = read("roots")
    assert {row["block"] for row in roots} == {numbers.block(block) for block in kept[0].blocks}
    assert len(roots) == 3 * len(set(kept[0].blocks))
    assert all(row["feed"] == "f" and row["hour_s"] == int(hour.timestamp()) for row in roots)
    values = read("values")
    assert sorted((row["message"], row["leaf"], row["value"]) for row in values) == [
        (number, numbers.leaf("k"), f"k{number}") for number in range(3)
    ]


def test_every_leaf_path_a_subscription_compares_is_numbered_nested_ones_included() -> None:
    """R_T's leaf columns come from the template's paths, the driving join from the plan's joins:
    both are numbered, for leaves below the bound node's children and attributes too."""
    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/x/y = $b/z/@w"
        " and $a/@lang = $b/k and fr:within($a, $b, 'PT1H') return <p/>"
    )
    (plan,) = joins.plans.values()
    numbers = joinsql.Numbers.of([plan])
    compared = joinsql._compared(plan)
    assert len(compared) == 4
    assert {numbers.leaf(path) for path in compared.values()} == set(range(len(numbers.leaves)))
    assert {numbers.leaf(path) for join in plan.joins for path in join} == set(range(len(numbers.leaves)))
