"""The route-batch command: cheap to register, clear about its options."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import click
import pytest
from click.testing import CliRunner

from feedrouter.spark.cli import register, route_batch_command
from tests.conftest import ROOT


def test_registering_the_command_loads_no_spark_database_or_s3_library() -> None:
    code = (
        "import sys; sys.path.insert(0, 'plugins');"
        "import click; from feedrouter.spark.cli import register; register(click.Group());"
        "bad = [m for m in ('pyspark', 'sqlalchemy', 'boto3') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_command_is_registered_and_documents_its_options() -> None:
    group = click.Group()
    register(group)
    assert group.commands["route-batch"] is route_batch_command
    result = CliRunner().invoke(route_batch_command, ["--help"])
    assert result.exit_code == 0
    for option in ("--feed", "--hour", "--master", "--plans-uri", "--max-part-bytes", "--progress"):
        assert option in result.output


def test_a_malformed_hour_is_a_clear_error() -> None:
    result = CliRunner().invoke(route_batch_command, ["--feed", "news", "--hour", "yesterday"])
    assert result.exit_code == 1 and "is not an hour: write it as YYYY-MM-DDTHH" in result.output


def test_a_date_alone_is_refused_not_routed_as_its_midnight(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database

    monkeypatch.setattr(database, "open_catalog", lambda: pytest.fail("the catalog was opened"))
    result = CliRunner().invoke(route_batch_command, ["--feed", "news", "--hour", "2026-11-23"])
    assert result.exit_code == 1 and "[FR608] '2026-11-23' is not an hour" in result.output


def test_the_command_reads_the_hour_without_airflow() -> None:
    source = (ROOT / "plugins" / "feedrouter" / "spark" / "cli.py").read_text(encoding="utf-8")
    assert "feedrouter.airflow" not in source and "from feedrouter.hours import parse_hour" in source


def test_each_subscriber_whose_delivery_failed_is_named(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database
    import feedrouter.spark as spark
    from feedrouter.spark.batch import BatchReport

    class _Engine:
        def dispose(self) -> None:
            pass

    report = BatchReport(
        1, "news", "2026-11-22T16", "succeeded", 1, 1, 1, 10, 2, 1, 0, 0, 0.1, failed=1,
        failures=("acme/eu: [FR607] bucket 'gone' does not exist",),
    )  # fmt: skip
    monkeypatch.setattr(database, "open_catalog", lambda: _Engine())
    monkeypatch.setattr(spark, "route_batch", lambda *args, **kwargs: report)
    result = CliRunner().invoke(route_batch_command, ["--feed", "news", "--hour", "2026-11-22T16"])
    assert result.exit_code == 0, result.output
    assert "not delivered: acme/eu: [FR607] bucket 'gone' does not exist" in result.output


class _Engine:
    def dispose(self) -> None:
        pass


def _empty_report(input_uri: str) -> Any:
    from feedrouter.spark.batch import BatchReport

    @dataclass(frozen=True)
    class Reported(BatchReport):  # the field H1's report gains; until then the CLI asks the catalog
        input_uri: str = ""

    return Reported(3, "news", "2026-11-22T16", "empty", 1, 0, 0, 0, 0, 0, 0, 0, 0.0, input_uri=input_uri)


def test_an_empty_hour_names_the_prefix_it_listed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database
    import feedrouter.spark as spark

    prefix = "s3://wires/news/dt=2026-11-22/hour=16/"
    monkeypatch.setattr(database, "open_catalog", lambda: _Engine())
    monkeypatch.setattr(spark, "route_batch", lambda *args, **kwargs: _empty_report(prefix))
    result = CliRunner().invoke(route_batch_command, ["--feed", "news", "--hour", "2026-11-22T16"])
    assert result.exit_code == 0, result.output
    assert f"no input objects under {prefix}" in result.output


@pytest.mark.parametrize("hour", ["2026-11-22T16:30", "2026-11-22 16", "2026-11-22T1", "16"])
def test_an_hour_that_is_not_whole_or_not_iso_is_refused(monkeypatch, hour: str) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database

    monkeypatch.setattr(database, "open_catalog", lambda: pytest.fail("the catalog was opened"))
    result = CliRunner().invoke(route_batch_command, ["--feed", "news", "--hour", hour])
    assert result.exit_code == 1 and "[FR608]" in result.output and "Traceback" not in result.output


def test_json_logs_of_a_batch_carry_its_feed_hour_and_id(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database
    import feedrouter.spark as spark
    from feedrouter.cli import main

    def route_batch(*args: Any, **kwargs: Any) -> Any:
        batch = {"feedrouter_feed": "news", "feedrouter_hour": "2026-11-22T16", "feedrouter_batch_id": 3}
        logging.getLogger("feedrouter.spark").info("routing 2 objects", extra=batch)
        return _empty_report("file:///in/")

    monkeypatch.setattr(database, "open_catalog", lambda: _Engine())
    monkeypatch.setattr(spark, "route_batch", route_batch)
    args = ["--log-format", "json", "route-batch", "--feed", "news", "--hour", "2026-11-22T16"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    [line] = [json.loads(text) for text in result.stderr.splitlines() if text.startswith("{")]
    assert line["message"] == "routing 2 objects"
    assert (line["feedrouter_feed"], line["feedrouter_hour"], line["feedrouter_batch_id"]) == (
        "news",
        "2026-11-22T16",
        3,
    )


@pytest.mark.parametrize(
    ("args", "env", "master"),
    [
        ([], {"FEEDROUTER_SPARK_MASTER": "spark://m:7077"}, "spark://m:7077"),
        (
            ["--master", "sc://connect:15002"],
            {"FEEDROUTER_SPARK_MASTER": "spark://m:7077"},
            "sc://connect:15002",
        ),
        ([], {}, None),
    ],
)
def test_the_master_comes_from_the_option_else_the_settings(
    monkeypatch, args: list[str], env: dict[str, str], master: str | None
) -> None:  # type: ignore[no-untyped-def]
    import feedrouter.catalog.database as database
    import feedrouter.spark as spark

    seen: dict[str, Any] = {}

    def route_batch(*args: Any, options: Any, **kwargs: Any) -> Any:
        seen["master"] = options.master
        return _empty_report("file:///in/")

    monkeypatch.delenv("FEEDROUTER_SPARK_MASTER", raising=False)
    monkeypatch.setattr(database, "open_catalog", lambda: _Engine())
    monkeypatch.setattr(spark, "route_batch", route_batch)
    result = CliRunner().invoke(
        route_batch_command, ["--feed", "news", "--hour", "2026-11-22T16", *args], env=env
    )
    assert result.exit_code == 0, result.output
    assert seen == {"master": master}


def test_the_spark_group_offers_the_package_command() -> None:
    from feedrouter.cli import main

    result = CliRunner().invoke(main, ["spark", "package", "--help"])
    assert result.exit_code == 0, result.output
    assert "--archives" in result.output and "--python-prefix" in result.output


@pytest.mark.parametrize(
    ("env", "args", "engine"),
    [
        ({}, [], "partitioned"),
        ({"FEEDROUTER_JOIN_ENGINE": "python"}, [], "python"),
        ({"FEEDROUTER_JOIN_ENGINE": "python"}, ["--engine", "spark"], "spark"),
        ({"FEEDROUTER_JOIN_ENGINE": "spark"}, ["--engine", "partitioned"], "partitioned"),
    ],
)
def test_join_batch_runs_the_engine_the_option_or_the_setting_names(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], args: list[str], engine: str
) -> None:
    import feedrouter.catalog.database as database
    import feedrouter.spark.joins as joins
    from feedrouter.spark.cli import join_batch_command

    seen = {}

    class Catalog:
        def dispose(self) -> None:
            pass

    def join_batch(catalog: Any, feed: str, hour: Any, *, plans_store: Any, options: Any) -> Any:
        seen["engine"] = options.engine
        return joins.JoinReport(feed, "2026-11-01T00", "no-joins", 1)

    monkeypatch.delenv("FEEDROUTER_JOIN_ENGINE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(database, "open_catalog", Catalog)
    monkeypatch.setattr(joins, "join_batch", join_batch)
    command = ["--feed", "news", "--hour", "2026-11-01T00", "--plans-uri", "file:///tmp/plans", *args]
    result = CliRunner().invoke(join_batch_command, command)
    assert result.exit_code == 0, result.output
    assert seen == {"engine": engine}
