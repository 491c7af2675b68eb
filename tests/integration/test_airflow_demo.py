"""The main-job command on embedded defaults: ``python -m feedrouter.airflow.demo`` generates an
hour of three feeds, inserts the catalog with SQL, runs both DAGs (local Spark, the embedded
PostgreSQL catalog, ``file://``), joins the stream feeds' hour and reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo") / "home"


@pytest.fixture(scope="module")
def demo(home: Path) -> subprocess.CompletedProcess[str]:
    """One run of the demo at a small size, shared by the tests of this module."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FEEDROUTER_", "AWS_"))}
    command = [sys.executable, "-m", "feedrouter.airflow.demo", "--home", str(home)]
    return subprocess.run(
        [*command, "--documents", "30", "--subscriptions", "40"],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT / "plugins")},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_demo_runs_the_real_dags_on_embedded_defaults(
    demo: subprocess.CompletedProcess[str], home: Path
) -> None:
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "feedrouter_plans: success" in demo.stdout
    assert "feedrouter_route: success" in demo.stdout
    assert "[FR106]" in demo.stdout  # the broken sample subscription is reported, not fatal
    for feed in ("news", "blogs", "wire"):
        assert re.search(rf"batch \d+ of {feed} \S+: succeeded, 30 documents, 0 quarantined,", demo.stdout)
    assert list((home / "output").rglob("_SUCCESS"))
    assert (home / "env.sh").is_file()


def test_the_demo_joins_the_stream_feeds_hour(demo: subprocess.CompletedProcess[str], home: Path) -> None:
    from feedrouter.delivery import read_part

    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    found = re.search(r"join desk/wire-then-blog: (\d+) pairs in (\S+)", demo.stdout)
    assert found, demo.stdout[-3000:]
    pairs = int(found.group(1))
    folder = home / "output" / "desk" / "wire-then-blog" / "wire"
    assert found.group(2).startswith(folder.as_uri())
    parts = sorted(folder.rglob("part-*"))
    results = [result for part in parts for result in read_part(part.read_bytes())]
    assert pairs > 0 and len(results) == pairs
    # format 2: each result names both of its messages, a wire item followed by a blog item
    assert all(r.pair is not None and (r.pair[0].feed, r.pair[1].feed) == ("wire", "blogs") for r in results)
    assert all(r.body.startswith(b"<story><title>") for r in results)
    assert "join desk/same-category: " in demo.stdout
    assert re.search(r"batch \d+ of wire \S+: succeeded, .* \d+ without a usable event time", demo.stdout)
