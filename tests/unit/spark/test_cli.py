"""The route-batch command: cheap to register, clear about its options."""

from __future__ import annotations

import subprocess
import sys

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
