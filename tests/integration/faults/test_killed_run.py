"""A run SIGKILLed half-way through its deliveries (issue 18, item 7): it leaves complete
``_SUCCESS`` folders that no ledger row names, and a batch row that says ``running``. The next run
of the hour reconciles the store: after a subscription is paused, its folder from the dead run is
withdrawn, and the ledger and the store agree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from feedrouter.delivery import MANIFEST, SUCCESS
from feedrouter.storage import FileStore
from tests.integration.faults.support import News, assert_ledger_matches_store, route_inline, when_free
from tests.integration.spark_support import batches, build, deliveries, snapshot

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def kill_a_run_after(parts: int, catalog_url: str, plans: FileStore) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "plugins"), str(ROOT)])}
    command = [
        sys.executable,
        "-m",
        "tests.integration.faults.killed_run",
        catalog_url,
        str(plans.root),
        str(parts),
    ]
    finished = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, timeout=300)
    assert finished.returncode == -signal.SIGKILL, finished.stderr.decode(errors="replace")[-3000:]


def test_a_killed_run_is_reconciled_by_the_next_run_of_the_hour(
    catalog: Engine, catalog_url: str, news: News, plans: FileStore
) -> None:
    kill_a_run_after(6, catalog_url, plans)

    left = {uri.rsplit("/", 1)[0] for uri in snapshot(news.out) if uri.endswith(f"/{SUCCESS}")}
    assert left, "the killed run completed no folder: kill it later"
    assert [b["status"] for b in batches(catalog)] == ["running"] and deliveries(catalog) == []

    folder = sorted(left)[0]
    manifest = json.loads(news.out.get(news.out.key_of(f"{folder}/{MANIFEST}")))
    with catalog.begin() as conn:
        conn.execute(
            text("UPDATE feedrouter.subscriptions SET active = false WHERE id = :i"),
            {"i": manifest["subscription_id"]},
        )
    ref, plan = build(catalog, plans)

    report = when_free(lambda: route_inline(catalog, plans))

    assert report.status == "succeeded" and report.withdrawn >= 1
    stored = snapshot(news.out)
    assert not any(uri.startswith(f"{folder}/") for uri in stored)
    assert stored == news.expected(ref, plan)
    assert_ledger_matches_store(catalog, news.out)
    dead, done = batches(catalog)
    assert (dead["status"], done["status"]) == ("failed", "succeeded")
    assert "did not finish" in dead["error_message"]
