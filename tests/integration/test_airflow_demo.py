"""The main-job command on embedded defaults: ``python -m feedrouter.airflow.demo`` generates an
hour, inserts the catalog with SQL, runs both DAGs (local Spark, the embedded PostgreSQL catalog,
``file://``) and reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def test_the_demo_runs_the_real_dags_on_embedded_defaults(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FEEDROUTER_", "AWS_"))}
    command = [sys.executable, "-m", "feedrouter.airflow.demo", "--home", str(home)]
    result = subprocess.run(
        [*command, "--documents", "30", "--subscriptions", "40"],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT / "plugins")},
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "feedrouter_plans: success" in result.stdout
    assert "feedrouter_route: success" in result.stdout
    assert "[FR106]" in result.stdout  # the broken sample subscription is reported, not fatal
    assert ", 30 documents," in result.stdout
    assert list((home / "output").rglob("_SUCCESS"))
    assert (home / "env.sh").is_file()
