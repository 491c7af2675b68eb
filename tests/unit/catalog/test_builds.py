"""Plan builds on the catalog: the active valid subscriptions, their outcomes, versions kept by the
change-tracking triggers, constraints, and how failures are classified."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from feedrouter.catalog import build_plan, catalog_version, catalog_versions, load_latest_plan
from feedrouter.catalog.database import create_catalog_engine, open_catalog
from feedrouter.errors import CatalogError, CompileError
from feedrouter.storage import FileStore
from tests.conftest import PostgresServer

DTD = '<!ENTITY eacute "&#233;"><!ELEMENT nitf (head)><!ELEMENT head (title)><!ELEMENT title (#PCDATA)>'
DOCUMENT = b'<!DOCTYPE nitf SYSTEM "x.dtd"><nitf><head><title>Caf&eacute;</title></head></nitf>'


@pytest.fixture
def engine(catalog_db_url: str) -> Engine:
    """Feed news, subscribers alice and (inactive) bob, four subscriptions."""
    engine = open_catalog(catalog_db_url)
    subscriptions = [(1, "titles", "//title", True), (1, "bad", "//a[b || c]", True)]
    subscriptions += [(1, "off", "//x", False), (2, "bobs", "//title", True)]
    with engine.begin() as conn:
        for statement in (
            "INSERT INTO dtds (name, root_element, text) VALUES ('news', 'nitf', :dtd)",
            "INSERT INTO feeds (name, input_prefix, dtd_id) VALUES ('news', 'file:///srv/in/news', 1)",
            "INSERT INTO subscribers (name, output_prefix) VALUES ('alice', 'file:///srv/out/alice')",
            "INSERT INTO subscribers (name, output_prefix, active)"
            " VALUES ('bob', 'file:///srv/out/bob', false)",
        ):
            conn.execute(text(statement), {"dtd": DTD})
        conn.execute(
            text(
                "INSERT INTO subscriptions (subscriber_id, feed_id, name, query, active)"
                " VALUES (:subscriber, 1, :name, :query, :active)"
            ),
            [dict(zip(("subscriber", "name", "query", "active"), row, strict=True)) for row in subscriptions],
        )
    return engine


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "plans")


def _sql(engine: Engine, statement: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement))


def _version(engine: Engine) -> int:
    with engine.connect() as conn:
        return catalog_version(conn, "news")


def test_a_build_serves_the_active_valid_subscriptions_and_records_the_errors(engine: Engine, store) -> None:
    result = build_plan(engine, "news", store)
    assert (result.subscriptions, result.valid, result.invalid) == (2, 1, 1)
    _, plan = load_latest_plan(engine, "news", store)
    assert {t.subscription for t in plan.targets.values()} == {"titles"}
    assert list(plan.route(DOCUMENT).values()) == ["<title>Café</title>".encode()]
    with engine.connect() as conn:
        bad = conn.execute(text("SELECT * FROM subscriptions WHERE name = 'bad'")).one()
    assert (bad.status, bad.error_code, bad.error_line, bad.error_column) == ("invalid", "FR104", 1, 7)


def test_every_change_a_build_reads_is_a_new_version(engine: Engine, store: FileStore) -> None:
    start = _version(engine)
    build_plan(engine, "news", store)
    assert _version(engine) == start  # writing statuses back is not a change
    seen = {start}
    for statement in (
        "UPDATE subscriptions SET query = '//head/title' WHERE name = 'titles'",
        "INSERT INTO subscriptions (subscriber_id, feed_id, name, query) VALUES (1, 1, 'new', '//head')",
        "UPDATE subscribers SET output_prefix = 'file:///srv/out/alice2' WHERE name = 'alice'",
        "UPDATE dtds SET text = text || ' '",
    ):
        _sql(engine, statement)
        assert _version(engine) not in seen, statement
        seen.add(_version(engine))
    with engine.connect() as conn:
        assert catalog_versions(conn) == {"news": _version(engine)}


def test_an_unchanged_catalog_is_a_no_op(engine: Engine, store: FileStore) -> None:
    first = build_plan(engine, "news", store)
    assert build_plan(engine, "news", store).reused
    _sql(engine, "UPDATE subscriptions SET query = '//head' WHERE name = 'bad'")
    second = build_plan(engine, "news", store)
    assert not second.reused and second.id != first.id and second.valid == 2


def test_an_invalid_dtd_fails_the_build_and_keeps_the_statuses(engine: Engine, store: FileStore) -> None:
    _sql(engine, "UPDATE dtds SET text = '<!ELEMENT broken'")
    with pytest.raises(CompileError, match="FR303"):
        build_plan(engine, "news", store)
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM subscriptions WHERE status = 'pending'")) == 4
    assert list(store.list()) == []


def test_unknown_feeds_and_strategies(engine: Engine, store: FileStore) -> None:
    with pytest.raises(CatalogError, match="no feed named 'sports'"):
        build_plan(engine, "sports", store)
    with pytest.raises(CompileError, match="FR302"):
        build_plan(engine, "news", store, strategy="XYZ")


def test_constraints_refuse_bad_rows(engine: Engine) -> None:
    for statement in (
        "INSERT INTO feeds (name, input_prefix) VALUES ('x', 'file:///srv/../etc')",
        "INSERT INTO feeds (name, input_prefix) VALUES ('x', 'ftp://host/in')",
        "INSERT INTO subscriptions (subscriber_id, feed_id, name, query) VALUES (1, 1, 'titles', '//x')",
        "UPDATE subscriptions SET status = 'great'",
        "INSERT INTO subscriptions (subscriber_id, feed_id, name, query) VALUES (99, 1, 'orphan', '//x')",
    ):
        with pytest.raises(IntegrityError):
            _sql(engine, statement)


def test_an_unreachable_catalog_is_a_transient_error(store: FileStore) -> None:
    engine = create_catalog_engine("postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    with pytest.raises(CatalogError, match="plan build of 'news' failed") as caught:
        build_plan(engine, "news", store)
    assert caught.value.transient


def test_a_missing_schema_is_a_terminal_error(postgres_server: PostgresServer, store: FileStore) -> None:
    name = postgres_server.create_database("feedrouter_empty")  # never migrated
    engine = create_catalog_engine(postgres_server.url(name))
    try:
        with pytest.raises(CatalogError, match="does not exist") as caught:
            build_plan(engine, "news", store)
        assert not caught.value.transient
    finally:
        engine.dispose()
        postgres_server.drop_database(name)
