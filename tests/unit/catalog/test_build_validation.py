"""Nothing a batch could fail on reaches a plan: bad names, bad or owned prefixes and shared folders
make that one subscription invalid (FR403, FR404), never the feed.

The build is the second line of defence: these tests run on a catalog whose name and prefix
checks were dropped (a catalog migrated by hand, rows older than revision 0004), so every hostile
row reaches the build; tests/integration/test_catalog_hardening.py shows the checks refusing them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from feedrouter.catalog import build_plan, load_latest_plan
from feedrouter.catalog.database import open_catalog
from feedrouter.catalog.outcomes import MAX_ERROR_MESSAGE_CHARS, MAX_PLAN_TEXT_CHARS, Outcome
from feedrouter.catalog.validation import encoded_length
from feedrouter.paths import MAX_COMPONENT, safe_component
from feedrouter.storage import FileStore
from tests.conftest import PostgresServer, empty_catalog, with_search_path
from tests.hostile.names.corpus import ACCEPTED_NAMES, REFUSED_NAMES, REFUSED_PREFIXES

#: The checks a build must not rely on (it checks the same again in Python).
DROPPED_CHECKS = {
    "subscribers": ("ck_subscribers_output_prefix_scheme", "ck_subscribers_output_prefix_shape"),
    "subscriptions": ("ck_subscriptions_name_encoded_length",),
}

DOCUMENT = b"<nitf><head><title>x</title></head></nitf>"


@pytest.fixture(scope="module")
def unchecked_catalog(postgres_server: PostgresServer) -> Iterator[Engine]:
    """A migrated catalog of this module without the name and prefix checks."""
    from feedrouter.catalog import migrate

    name = postgres_server.create_database("feedrouter_unchecked")
    url = postgres_server.url(name)
    migrate.upgrade(url)
    engine = open_catalog(with_search_path(url))
    with engine.begin() as conn:
        for table, checks in DROPPED_CHECKS.items():
            for check in checks:
                conn.execute(text(f"ALTER TABLE feedrouter.{table} DROP CONSTRAINT {check}"))
    yield engine
    engine.dispose()
    postgres_server.drop_database(name)


@pytest.fixture
def engine(unchecked_catalog: Engine) -> Engine:
    engine = unchecked_catalog
    empty_catalog(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO feeds (name, input_prefix) VALUES ('news', 'file:///srv/in/news')"))
    return engine


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "plans")


def _subscriber(engine: Engine, name: str, prefix: str) -> int:
    with engine.begin() as conn:
        return conn.execute(
            text("INSERT INTO subscribers (name, output_prefix) VALUES (:n, :p) RETURNING id"),
            {"n": name, "p": prefix},
        ).scalar_one()


def _subscription(engine: Engine, subscriber: int, name: str, query: str = "//title") -> None:
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO subscriptions (subscriber_id, feed_id, name, query) VALUES (:s, 1, :n, :q)"),
            {"s": subscriber, "n": name, "q": query},
        )


def _statuses(engine: Engine) -> dict[str, tuple[str, str | None, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, status, error_code, error_message FROM subscriptions"))
        return {row.name: (row.status, row.error_code, row.error_message) for row in rows}


def test_a_name_too_long_once_encoded_is_invalid_and_the_feed_still_builds(engine, store) -> None:
    alice = _subscriber(engine, "alice", "file:///srv/out/alice")
    _subscription(engine, alice, "é" * 40)  # 80 bytes, 240 characters as a key segment
    _subscription(engine, alice, "titles")
    result = build_plan(engine, "news", store)
    assert (result.valid, result.invalid) == (1, 1)
    status, code, message = _statuses(engine)["é" * 40]
    assert (status, code) == ("invalid", "FR403") and "240 characters once encoded" in (message or "")
    _, plan = load_latest_plan(engine, "news", store)
    assert [t.subscription for t in plan.targets.values()] == ["titles"]
    assert list(plan.route(DOCUMENT)) == [next(iter(plan.targets))]


@pytest.mark.parametrize(("name", "why"), REFUSED_NAMES)
def test_hostile_names_are_invalid_at_build(engine, store, name: str, why: str) -> None:
    alice = _subscriber(engine, "alice", "file:///srv/out/alice")
    if len(name) > 200:  # the length CHECK (kept) refuses it at insert already
        with pytest.raises(IntegrityError):
            _subscription(engine, alice, name)
        return
    _subscription(engine, alice, name)
    build_plan(engine, "news", store)
    assert _statuses(engine)[name][:2] == ("invalid", "FR403"), why


def test_names_that_fit_a_segment_are_valid(engine, store) -> None:
    alice = _subscriber(engine, "alice", "file:///srv/out/alice")
    for name in ACCEPTED_NAMES:
        _subscription(engine, alice, name)
    assert build_plan(engine, "news", store).valid == len(ACCEPTED_NAMES)


@pytest.mark.parametrize(
    ("prefix", "why"),
    [(p, w) for p, w in REFUSED_PREFIXES if p.startswith(("s3://", "file:///")) and "\n" not in p],
)
def test_non_canonical_prefixes_are_invalid_at_build(engine, store, prefix: str, why: str) -> None:
    subscriber = _subscriber(engine, "mallory", prefix)
    _subscription(engine, subscriber, "titles")
    build_plan(engine, "news", store)
    assert _statuses(engine)["titles"][:2] == ("invalid", "FR403"), why


@pytest.mark.parametrize(
    "prefix",
    [
        "file:///srv/in/news",  # the feed's input
        "file:///srv/in",  # contains the input: subscription "news" would deliver into it
        "file:///srv/in/news/_quarantine/x",  # the default quarantine
        "PLANS",  # the plans store
        "PLANS/mallory",
    ],
)
def test_prefixes_overlapping_what_feedrouter_owns_are_invalid(engine, store, prefix: str) -> None:
    prefix = prefix.replace("PLANS", store.uri)
    _subscription(engine, _subscriber(engine, "mallory", prefix), "titles")
    build_plan(engine, "news", store)
    status, code, message = _statuses(engine)["titles"]
    assert (status, code) == ("invalid", "FR403") and "which feedrouter owns" in (message or "")


def test_two_subscriptions_on_one_folder_the_older_keeps_it(engine, store) -> None:
    alice = _subscriber(engine, "alice", "file:///srv/out/shared")
    bob = _subscriber(engine, "bob", "file:///srv/out/shared/")  # the same folder, spelled with a slash
    _subscription(engine, alice, "titles")
    _subscription(engine, bob, "titles", "//head")
    _subscription(engine, bob, "heads", "//head")
    result = build_plan(engine, "news", store)
    assert (result.valid, result.invalid) == (2, 1)
    _, plan = load_latest_plan(engine, "news", store)
    assert sorted((t.subscriber, t.subscription) for t in plan.targets.values()) == [
        ("alice", "titles"),
        ("bob", "heads"),
    ]
    with engine.connect() as conn:
        query = text("SELECT * FROM subscriptions WHERE subscriber_id = :b AND name = 'titles'")
        later = conn.execute(query, {"b": bob}).one()
    assert (later.status, later.error_code) == ("invalid", "FR404")
    assert "subscriber 'alice'" in later.error_message and "created first" in later.error_message
    # The plan routes nothing for the loser (it was taken out of the router too).
    assert set(plan.route(DOCUMENT)) == set(plan.targets)


def test_explain_and_error_texts_are_bounded() -> None:
    outcome = Outcome("invalid", "FR104", "e" * 10**6, plan_text="p" * 10**6)
    assert len(outcome.error_message or "") <= MAX_ERROR_MESSAGE_CHARS
    assert len(outcome.plan_text or "") <= MAX_PLAN_TEXT_CHARS
    assert (outcome.plan_text or "").endswith("more characters omitted)")


@given(st.text(min_size=1, max_size=60))
def test_the_encoded_length_is_the_key_segments_length(name: str) -> None:
    try:
        assert encoded_length(name) == len(safe_component(name))
    except ValueError:  # too long for a segment: the count says so too
        assert encoded_length(name) > MAX_COMPONENT


def test_a_build_compiles_with_the_feeds_result_settings(engine, store) -> None:
    from feedrouter.limits import ResultLimits

    _subscription(engine, _subscriber(engine, "alice", "file:///srv/out/alice"), "titles")
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE feeds SET max_result_bytes = 30, max_document_result_bytes = 100,"
                " invalid_documents = 'quarantine'"
            )
        )
    build_plan(engine, "news", store)
    _, plan = load_latest_plan(engine, "news", store)
    assert (plan.router.result_limits, plan.router.invalid_documents) == (ResultLimits(30, 100), "quarantine")
    assert plan.route_outcome(DOCUMENT).results == plan.route(DOCUMENT) != {}


def test_changing_a_feed_setting_is_a_catalog_change(engine, store) -> None:
    _subscription(engine, _subscriber(engine, "alice", "file:///srv/out/alice"), "titles")
    first = build_plan(engine, "news", store)
    with engine.begin() as conn:
        conn.execute(text("UPDATE feeds SET invalid_documents = 'quarantine'"))
    second = build_plan(engine, "news", store)
    assert not second.reused and second.catalog_version != first.catalog_version
    assert load_latest_plan(engine, "news", store)[1].feed.invalid_documents == "quarantine"
