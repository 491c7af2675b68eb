"""The driver's side of the job without Spark: slicing from the session's conf, job tags,
progress from Connect's stage reports, the batch's log fields."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from feedrouter.spark import batchlog
from feedrouter.spark.job import DEFAULT_PARALLELISM, Slicing, job_tag, parallelism, session_conf
from feedrouter.spark.progress import StageCounter, is_connect


class Conf:
    """A session's ``spark.conf``: get/set/unset over a dict."""

    def __init__(self, **values: str) -> None:
        self.values = {key.replace("_", "."): value for key, value in values.items()}

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


def session(**conf: str) -> SimpleNamespace:
    return SimpleNamespace(conf=Conf(**conf))


@pytest.mark.parametrize(
    ("conf", "cores"),
    [
        ({"spark_default_parallelism": "6", "spark_master": "local[2]"}, 6),
        ({"spark_master": "local[3]"}, 3),
        ({"spark_master": "local[2,4]"}, 2),
        ({"spark_master": "spark://h:7077", "spark_cores_max": "5"}, 5),
        ({"spark_master": "yarn", "spark_executor_instances": "3", "spark_executor_cores": "2"}, 6),
        ({"spark_master": "yarn"}, DEFAULT_PARALLELISM),
        ({"spark_default_parallelism": "zero"}, DEFAULT_PARALLELISM),
    ],
)
def test_parallelism_comes_from_the_sessions_conf(conf: dict[str, str], cores: int) -> None:
    assert parallelism(session(**conf)) == cores


def test_slicing_bounds_input_tasks_by_objects() -> None:
    spark = session(spark_master="local[2]")
    assert Slicing.default(spark, 3, None, None) == Slicing(3, 4)
    assert Slicing.default(spark, 100, None, None) == Slicing(8, 4)
    assert Slicing.default(spark, 100, 5, 1) == Slicing(5, 1)


def test_session_conf_is_restored_after_the_run() -> None:
    spark = session(spark_sql_execution_arrow_maxRecordsPerBatch="10")
    with session_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": "4", "spark.x": "1"}):
        assert spark.conf.get("spark.x") == "1"
    assert spark.conf.values == {"spark.sql.execution.arrow.maxRecordsPerBatch": "10"}


def test_job_tags_are_unique_and_have_no_commas() -> None:
    spec = SimpleNamespace(feed="news,wire", hour_text="2026-11-22T16")
    first, second = job_tag(spec), job_tag(spec)  # type: ignore[arg-type]
    assert first != second and "," not in first and first.startswith("feedrouter-news_wire-2026-11-22T16-")


def test_connect_progress_counts_tasks_over_the_stages_reported() -> None:
    seen: list[tuple[int, int]] = []
    counter = StageCounter(4, lambda finished, total: seen.append((finished, total)))
    stage = SimpleNamespace
    counter([stage(stage_id=1, num_completed_tasks=1, num_tasks=2)], 1, "op", False)
    counter(
        [
            stage(stage_id=1, num_completed_tasks=2, num_tasks=2),
            stage(stage_id=2, num_completed_tasks=0, num_tasks=4),
        ],
        2,
        "op",
        False,
    )
    counter(None, 0, "op", True)
    assert seen == [(1, 4), (2, 4), (2, 4)]  # capped at the job's estimate
    assert not is_connect(SimpleNamespace())


def test_batch_log_records_carry_feed_hour_and_batch_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "feedrouter.spark")
    with batchlog.batch_fields("news", "2026-11-22T16"):
        batchlog.log.info("before the ledger row")
        batchlog.set_batch_id(42)
        batchlog.log.info("after it")
    batchlog.log.info("outside a batch")
    fields = [tuple(getattr(r, name, "-") for name in batchlog.FIELDS) for r in caplog.records]
    assert fields == [("news", "2026-11-22T16", None), ("news", "2026-11-22T16", 42), ("-", "-", "-")]
