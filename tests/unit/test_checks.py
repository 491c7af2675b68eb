"""The checks the test command relies on are switched on in pyproject.toml: the package's docstring
examples are collected (not the Airflow/Spark adapters', which tests/unit/airflow/test_doctests.py
runs), and ruff applies its Airflow rules to the DAG files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A DAG with no schedule argument: ruff's AIR002.
UNSCHEDULED_DAG = """\
from airflow.sdk import DAG

dag = DAG(dag_id="example")
"""


def _collected(*paths: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_package_docstring_examples_are_collected_but_not_the_adapters_that_import_airflow() -> None:
    collected = _collected("plugins/feedrouter")
    assert "plugins/feedrouter/hours.py::feedrouter.hours" in collected
    assert "plugins/feedrouter/lang/parser.py::feedrouter.lang.parser" in collected
    adapters = [
        item
        for item in collected
        if item.startswith(("plugins/feedrouter/airflow/", "plugins/feedrouter/spark/"))
    ]
    assert adapters == []


def test_ruff_applies_the_airflow_rules() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    done = subprocess.run(
        [ruff, "check", "--stdin-filename", "dags/example.py", "--output-format", "concise", "-"],
        cwd=ROOT,
        input=UNSCHEDULED_DAG,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "AIR002" in done.stdout, done.stdout + done.stderr
