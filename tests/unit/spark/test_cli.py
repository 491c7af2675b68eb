"""The route-batch command: cheap to register, clear about its options."""

from __future__ import annotations

import subprocess
import sys

import click
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
