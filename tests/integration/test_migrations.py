"""Alembic migrations on a real Postgres: up, down, up again; models and migrated schema agree."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, create_engine, text

from feedrouter.catalog import migrate
from feedrouter.catalog.models import SCHEMA, Base

pytestmark = pytest.mark.integration

TABLES = {
    "alembic_version",
    "batches",
    "catalog_versions",
    "deliveries",
    "dtds",
    "feeds",
    "hour_leases",
    "hour_listings",
    "plan_builds",
    "subscribers",
    "subscriptions",
}


def _objects(url: str) -> dict[str, set[str]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        params = {"s": SCHEMA}
        found = {
            "tables": set(
                conn.scalars(text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), params)
            ),
            "views": set(conn.scalars(text("SELECT viewname FROM pg_views WHERE schemaname = :s"), params)),
            "functions": set(
                conn.scalars(
                    text(
                        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                        " WHERE n.nspname = :s"
                    ),
                    params,
                )
            ),
            "triggers": set(
                conn.scalars(
                    text(
                        "SELECT t.tgrelid::regclass || '.' || t.tgname FROM pg_trigger t"
                        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
                        " WHERE n.nspname = :s AND NOT t.tgisinternal"
                    ),
                    params,
                )
            ),
        }
    engine.dispose()
    return found


def _check_constraints(url: str) -> dict[str, str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
                " JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = :s AND c.contype = 'c'"
            ),
            {"s": SCHEMA},
        )
        found = dict(rows.all())
    engine.dispose()
    return found


def test_upgrade_downgrade_and_upgrade_again_on_an_empty_database(fresh_database: str) -> None:
    migrate.upgrade(fresh_database)
    objects = _objects(fresh_database)
    assert objects["tables"] == TABLES
    assert objects["views"] == {"feed_status", "subscription_problems"}
    assert "bump_catalog_versions" in objects["functions"]
    # insert/update/delete tracking and updated_at on four tables, TRUNCATE tracking on three
    assert len(objects["triggers"]) == 4 * 3 + 4 + 3

    migrate.downgrade(fresh_database, "base")
    emptied = _objects(fresh_database)
    assert emptied["tables"] == {"alembic_version"}
    assert not emptied["views"] and not emptied["functions"] and not emptied["triggers"]

    migrate.upgrade(fresh_database)
    assert _objects(fresh_database) == objects


def test_models_and_migrated_schema_agree(catalog_url: str) -> None:
    engine = create_engine(catalog_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={
                "include_schemas": True,
                "include_name": lambda name, kind, _parents: name == SCHEMA if kind == "schema" else True,
                "version_table_schema": SCHEMA,
                "compare_type": True,
                "compare_server_default": True,
            },
        )
        differences = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert differences == []


def test_check_constraints_of_models_and_migrations_are_the_same(
    catalog_url: str, fresh_database: str
) -> None:
    # Autogenerate does not compare CHECK constraints: build the schema from the models in a second
    # database and compare Postgres's own rendering of every check, by name.
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {SCHEMA}"))
        Base.metadata.create_all(conn)
    engine.dispose()
    from_models = _check_constraints(fresh_database)
    assert len(from_models) >= 25
    assert _check_constraints(catalog_url) == from_models


def test_the_hardening_migration_names_rows_that_break_its_checks(fresh_database: str) -> None:
    migrate.upgrade(fresh_database, "0003")
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        for statement in (
            "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('news', 's3://in-bucket/news')",
            "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('mallory', 'file:///srv/out/./alice')",
            "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('alice', 'file:///srv/out/alice')",
        ):
            conn.execute(text(statement))
        conn.execute(
            text(
                "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
                " SELECT s.id, f.id, :n, '//title' FROM feedrouter.subscribers s, feedrouter.feeds f"
                " WHERE s.name = 'alice'"
            ),
            {"n": "é" * 40},
        )
    with pytest.raises(
        RuntimeError, match=r"subscribers rows with a non-canonical output_prefix: 'mallory: "
    ):
        migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        conn.execute(text("UPDATE feedrouter.subscribers SET output_prefix = 'file:///srv/out/m'"))
    with pytest.raises(RuntimeError, match="subscriptions rows whose name is over 200 encoded"):
        migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        conn.execute(text("UPDATE feedrouter.subscriptions SET name = 'titles'"))
    migrate.upgrade(fresh_database, "0004")
    with engine.connect() as conn:
        assert conn.scalar(text("SELECT version_num FROM feedrouter.alembic_version")) == "0004"
    engine.dispose()


def _track_feeds(conn: Connection) -> str:
    return str(conn.scalar(text("SELECT pg_get_functiondef('feedrouter.track_feeds'::regproc)")))


def _feed_columns(conn: Connection) -> set[str]:
    query = "SELECT column_name FROM information_schema.columns WHERE table_schema = :s AND table_name = :t"
    return set(conn.scalars(text(query), {"s": SCHEMA, "t": "feeds"}))


EVENT_TIME_COLUMNS = {"event_time_path", "event_time_format", "max_join_window", "allowed_lateness"}
BUMP_TRADES = "SELECT version FROM feedrouter.catalog_versions WHERE feed_name = 'trades'"


def test_the_event_time_migration_goes_down_to_0005_and_up_again(fresh_database: str) -> None:
    migrate.upgrade(fresh_database, "0005")
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        tracking_0005 = _track_feeds(conn)
        conn.execute(text("INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('trades', 's3://in-b/t')"))
    migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        assert _feed_columns(conn) >= EVENT_TIME_COLUMNS
        assert _track_feeds(conn) != tracking_0005
        conn.execute(text("UPDATE feedrouter.feeds SET event_time_path = '//trade/@executed'"))

    migrate.downgrade(fresh_database, "0005")
    with engine.begin() as conn:
        assert not EVENT_TIME_COLUMNS & _feed_columns(conn)
        assert _track_feeds(conn) == tracking_0005  # 0005's function is back, and still works
        before = conn.scalar(text(BUMP_TRADES))
        conn.execute(text("UPDATE feedrouter.feeds SET max_result_bytes = 30"))
    with engine.connect() as conn:
        assert conn.scalar(text(BUMP_TRADES)) == before + 1

    migrate.upgrade(fresh_database)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM feedrouter.feeds WHERE name = 'trades'")).one()
    engine.dispose()
    assert (row.event_time_path, row.event_time_format, row.max_join_window, row.allowed_lateness) == (
        None,
        "iso8601",
        timedelta(hours=24),
        timedelta(hours=1),
    )
    checks = _check_constraints(fresh_database)
    assert {f"ck_feeds_{column}" for column in EVENT_TIME_COLUMNS} <= set(checks)


def _tracking(conn: Connection) -> tuple[str, ...]:
    return _track_feeds(conn), *(
        str(conn.scalar(text(f"SELECT pg_get_functiondef('feedrouter.{name}'::regproc)")))
        for name in ("track_subscriptions", "track_subscribers")
    )


def _versions(conn: Connection) -> dict[str, int]:
    rows = conn.execute(text("SELECT feed_name, version FROM feedrouter.catalog_versions"))
    return {name: version for name, version in rows}


ADD_TIMED_FEED = (
    "INSERT INTO feedrouter.feeds (name, input_prefix, event_time_path) VALUES (:n, :p, '//@t')"
)
JOIN = 'import module namespace fr = "urn:feedrouter:stream:1"; fr:stream("blogs")'
ADD_JOIN = (
    "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
    " SELECT s.id, f.id, :n, :q FROM feedrouter.subscribers s, feedrouter.feeds f WHERE f.name = 'trades'"
)


def test_the_join_tracking_migration_goes_down_to_0006_and_up_again(fresh_database: str) -> None:
    migrate.upgrade(fresh_database, "0006")
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        tracking_0006 = _tracking(conn)
        for name in ("trades", "blogs"):
            conn.execute(text(ADD_TIMED_FEED), {"n": name, "p": f"s3://in-bucket/{name}"})
        conn.execute(
            text("INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('a', 's3://out-bucket/a')")
        )
    migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        assert all(new != old for new, old in zip(_tracking(conn), tracking_0006, strict=True))
        before = _versions(conn)
        conn.execute(text(ADD_JOIN), {"n": "first", "q": JOIN})
    with engine.connect() as conn:
        assert _versions(conn) == {feed: v + 1 for feed, v in before.items()}  # blogs too

    migrate.downgrade(fresh_database, "0006")
    with engine.begin() as conn:
        assert _tracking(conn) == tracking_0006  # 0006's functions are back, and still work
        before = _versions(conn)
        conn.execute(text(ADD_JOIN), {"n": "second", "q": JOIN})
    with engine.connect() as conn:
        assert _versions(conn) == {**before, "trades": before["trades"] + 1}  # blogs not

    migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        assert all(new != old for new, old in zip(_tracking(conn), tracking_0006, strict=True))
        before = _versions(conn)
        conn.execute(text("DELETE FROM feedrouter.subscriptions WHERE name = 'second'"))
    with engine.connect() as conn:
        assert _versions(conn) == {feed: v + 1 for feed, v in before.items()}
    engine.dispose()


JOIN_LIMIT_COLUMNS = {"max_join_pairs", "max_join_result_bytes"}
BUMP_BLOGS = "SELECT version FROM feedrouter.catalog_versions WHERE feed_name = 'blogs'"


def test_the_join_limits_migration_goes_down_to_0008_and_up_again(fresh_database: str) -> None:
    migrate.upgrade(fresh_database, "0008")
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        tracking_0008 = _track_feeds(conn)
        conn.execute(text(ADD_TIMED_FEED), {"n": "blogs", "p": "s3://in-bucket/blogs"})
    migrate.upgrade(fresh_database)
    with engine.begin() as conn:
        row = conn.execute(text("SELECT * FROM feedrouter.feeds WHERE name = 'blogs'")).one()
        assert (row.max_join_pairs, row.max_join_result_bytes) == (100_000, 64 << 20)  # the defaults
        assert _track_feeds(conn) != tracking_0008
        before = conn.scalar(text(BUMP_BLOGS))
        conn.execute(text("UPDATE feedrouter.feeds SET max_join_pairs = 10"))
    with engine.connect() as conn:
        assert conn.scalar(text(BUMP_BLOGS)) == before + 1  # a setting the plan carries

    migrate.downgrade(fresh_database, "0008")
    with engine.begin() as conn:
        assert not JOIN_LIMIT_COLUMNS & _feed_columns(conn)
        assert _track_feeds(conn) == tracking_0008  # 0008's function is back, and still works
        before = conn.scalar(text(BUMP_BLOGS))
        conn.execute(text("UPDATE feedrouter.feeds SET max_join_window = interval '2 hours'"))
    with engine.connect() as conn:
        assert conn.scalar(text(BUMP_BLOGS)) == before + 1

    migrate.upgrade(fresh_database)
    with engine.connect() as conn:
        assert _feed_columns(conn) >= JOIN_LIMIT_COLUMNS
    engine.dispose()
    checks = _check_constraints(fresh_database)
    assert {f"ck_feeds_{column}" for column in JOIN_LIMIT_COLUMNS} <= set(checks)


def test_the_hour_listings_migration_goes_down_to_0009_and_up_again(fresh_database: str) -> None:
    migrate.upgrade(fresh_database)
    assert "hour_listings" in _objects(fresh_database)["tables"]
    migrate.downgrade(fresh_database, "0009")
    assert "hour_listings" not in _objects(fresh_database)["tables"]
    migrate.upgrade(fresh_database)
    assert "ck_hour_listings_whole_hour" in _check_constraints(fresh_database)
