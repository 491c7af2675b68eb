"""A plan build that cannot get its lock, or loses its connection, fails as transient (FR402): a retry
may succeed, so Airflow must retry it rather than fail the task for good."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from feedrouter.catalog import builder
from feedrouter.errors import CatalogError, TransientCatalogError
from feedrouter.storage import FileStore

#: An engine that is never connected: the build's attempt is replaced.
NOWHERE = "postgresql+psycopg://nobody@127.0.0.1:1/none"


def test_a_lock_kept_busy_is_a_transient_catalog_error(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    def busy(*_args: object) -> None:
        raise builder._LockWasBusy()

    monkeypatch.setattr(builder, "_attempt", busy)
    monkeypatch.setattr(builder, "MAX_WAITS", 2)
    with pytest.raises(TransientCatalogError) as caught:
        builder.build_plan(create_engine(NOWHERE), "news", FileStore(tmp_path))
    assert caught.value.code == "FR402" and caught.value.transient


def test_a_lost_connection_is_a_transient_catalog_error(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    def lost(*_args: object) -> None:
        raise OperationalError("SELECT 1", {}, ConnectionError("server closed the connection unexpectedly"))

    monkeypatch.setattr(builder, "_attempt", lost)
    monkeypatch.setattr(builder, "_connection_problem", lambda exc: True)
    with pytest.raises(TransientCatalogError) as caught:
        builder.build_plan(create_engine(NOWHERE), "news", FileStore(tmp_path), attempts=1)
    assert caught.value.code == "FR402"


class _SerializationFailure(Exception):
    sqlstate = "40001"


def test_serialization_failures_are_retried_with_a_fresh_attempt(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def flaky(*_args: object) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("SELECT 1", {}, _SerializationFailure("could not serialize access"))
        return "built"

    monkeypatch.setattr(builder, "_attempt", flaky)
    assert builder.build_plan(create_engine(NOWHERE), "news", FileStore(tmp_path), attempts=3) == "built"
    assert len(calls) == 3


def test_retries_stop_after_the_attempts_and_stay_transient(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def failing(*_args: object) -> None:
        calls.append(1)
        raise OperationalError("SELECT 1", {}, _SerializationFailure("could not serialize access"))

    monkeypatch.setattr(builder, "_attempt", failing)
    with pytest.raises(TransientCatalogError, match="could not serialize access"):
        builder.build_plan(create_engine(NOWHERE), "news", FileStore(tmp_path), attempts=2)
    assert len(calls) == 2


def test_other_database_errors_are_not_retried(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    class _Syntax(Exception):
        sqlstate = "42601"

    calls: list[int] = []

    def broken(*_args: object) -> None:
        calls.append(1)
        raise OperationalError("SELECT 1", {}, _Syntax("syntax error"))

    monkeypatch.setattr(builder, "_attempt", broken)
    with pytest.raises(CatalogError) as caught:
        builder.build_plan(create_engine(NOWHERE), "news", FileStore(tmp_path))
    assert caught.value.code == "FR400" and not caught.value.transient and len(calls) == 1
