"""The route task: the plan build is checked and the hour's input listed once, before any Spark
starts (an empty hour starts none); the operators share one cached hook per task instance."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

pytest.importorskip("airflow")

from feedrouter.airflow import routing
from feedrouter.airflow.hours import HourBatch
from feedrouter.catalog import build_plan, open_catalog
from feedrouter.errors import NoPlanBuildError
from feedrouter.storage import FileStore, ObjectStore

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


class FakeHook:
    """What the route step asks of FeedrouterHook, on the test catalog and file:// stores."""

    s3_access = None

    def __init__(self, url: str, plans: Path) -> None:
        self.url = url
        self.plans = plans

    def catalog_engine(self) -> Engine:
        return open_catalog(self.url)

    def plans_store(self) -> ObjectStore:
        return FileStore(self.plans)

    def store(self, uri: str) -> ObjectStore:
        return FileStore.from_uri(uri)

    def spark_master(self) -> str | None:
        return None


@pytest.fixture
def hook(tmp_path: Path, catalog_db_url: str) -> FakeHook:
    """Feed news (input under tmp/in) with one subscription; news has a plan build, wire none."""
    url = catalog_db_url
    engine = open_catalog(url)
    inputs, outputs = (tmp_path / "in").as_uri(), (tmp_path / "out").as_uri()
    with engine.begin() as conn:
        for name in ("news", "wire"):
            conn.execute(
                text("INSERT INTO feeds (name, input_prefix) VALUES (:n, :p)"), {"n": name, "p": inputs}
            )
        conn.execute(
            text("INSERT INTO subscribers (name, output_prefix) VALUES ('alice', :p)"), {"p": outputs}
        )
        conn.execute(
            text("INSERT INTO subscriptions (subscriber_id, feed_id, name, query) VALUES (1, 1, 't', '//t')")
        )
    build_plan(engine, "news", FileStore(tmp_path / "plans"))
    engine.dispose()
    return FakeHook(url, tmp_path / "plans")


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The folders of every listing of the hour's input (the quarantine's are not counted)."""
    seen: list[str] = []
    original = FileStore._list
    hour = tmp_path / "in" / "dt=2026-11-22" / "hour=16"

    def counting(self: FileStore, prefix: str) -> Any:
        if (self.root / prefix).is_relative_to(hour):
            seen.append(str(self.root / prefix))
        return original(self, prefix)

    monkeypatch.setattr(FileStore, "_list", counting)
    return seen


def test_an_empty_hour_is_listed_once(hook: FakeHook, listings: list[str]) -> None:
    summary = routing.route(hook, HourBatch("news", HOUR), None)
    assert summary["status"] == "empty" and summary["objects"] == 0
    assert listings == [str(hook.plans.parent / "in" / "dt=2026-11-22" / "hour=16")]


def test_a_feed_without_a_plan_build_fails_before_listing_anything(
    hook: FakeHook, listings: list[str]
) -> None:
    with pytest.raises(NoPlanBuildError, match="feed 'wire' has no plan build") as caught:
        routing.route(hook, HourBatch("wire", HOUR), None)
    assert caught.value.code == "FR601" and listings == []


def test_operators_and_the_sensor_share_one_hook_per_task_instance() -> None:
    from feedrouter.airflow.operators import FeedrouterHookMixin, FeedrouterOperator, RouteBatchOperator
    from feedrouter.airflow.sensors import HourInputSensor

    task = RouteBatchOperator(task_id="route", batch={"feed": "news", "hour": "2026-11-22T16"})
    assert isinstance(task, FeedrouterOperator) and task.hook is task.hook
    assert RouteBatchOperator(task_id="other", batch={}).hook is not task.hook
    assert issubclass(HourInputSensor, FeedrouterHookMixin)
