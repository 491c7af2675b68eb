"""The Spark SQL join engine's session handling, on a fake session (the queries themselves run on
real Spark in tests/integration/test_join_pipeline.py and test_spark_connect.py)."""

from __future__ import annotations

from typing import Any

import pytest

from feedrouter.spark import joinsql


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
