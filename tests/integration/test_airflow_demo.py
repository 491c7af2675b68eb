"""The main-job command on embedded defaults: ``python -m feedrouter.airflow.demo`` generates an
hour of three feeds, inserts the catalog with SQL, runs both DAGs (local Spark, the embedded
PostgreSQL catalog, ``file://``), joins the stream feeds' hour and reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

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
        [*command, "--documents", "60", "--subscriptions", "40"],
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
        assert re.search(rf"batch \d+ of {feed} \S+: succeeded, 60 documents, 0 quarantined,", demo.stdout)
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


def test_the_demos_pairs_are_what_saxon_gives_for_the_same_text(
    demo: subprocess.CompletedProcess[str], home: Path
) -> None:
    """Each join subscription's delivered pairs, in XQuery's order, against Saxon running its text
    over the demo's inputs (the stream's only hour)."""
    from feedrouter.airflow.demo import JOINS, STREAM_FEEDS
    from tests.differential.join_oracle import SaxonJoinOracle
    from tests.differential.join_pipeline import saxon_results
    from tests.differential.oracle import canonical

    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    feeds: dict[str, dict[datetime, list[tuple[str, bytes]]]] = {}
    for feed in STREAM_FEEDS:
        (folder,) = (home / "input" / feed).glob("dt=*/hour=*")
        hour = datetime.strptime(f"{folder.parent.name} {folder.name}", "dt=%Y-%m-%d hour=%H")
        hour = hour.replace(tzinfo=timezone.utc)
        feeds[feed] = {hour: [(path.name, path.read_bytes()) for path in sorted(folder.iterdir())]}
    with SaxonJoinOracle() as oracle:
        expected = saxon_results(oracle, feeds, JOINS, hour, timedelta(hours=1))  # the feeds' lateness

    for name in JOINS:
        ours = sorted(_pairs(home / "output" / "desk" / name))
        assert canonical(b"".join(body for _, body in ours)) == canonical(expected[name]), name
    assert all(expected[name] for name in JOINS)  # no comparison of two empty results


def _pairs(folder: Path) -> list[tuple[tuple[Any, ...], bytes]]:
    """A join subscription's delivered results with XQuery's order key (left, then right message)."""
    from feedrouter.delivery import read_part

    found = []
    for part in folder.rglob("part-*"):
        for result in read_part(part.read_bytes()):
            assert result.pair is not None
            left, right = result.pair
            found.append(
                ((left.hour, left.source, left.index, right.hour, right.source, right.index), result.body)
            )
    return found
