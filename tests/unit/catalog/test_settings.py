"""Configuration from the environment, and the feed layout."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from feedrouter.catalog.models import Feed
from feedrouter.catalog.settings import database_url, normalize_url, plans_uri


def test_embedded_defaults_live_under_feedrouter_home(tmp_path: Path) -> None:
    env = {"FEEDROUTER_HOME": str(tmp_path)}
    assert database_url(env) == f"sqlite:///{tmp_path}/feedrouter.db"
    assert plans_uri(env) == (tmp_path / "plans").as_uri()


def test_configured_urls_win_and_use_psycopg_3() -> None:
    env = {"FEEDROUTER_DATABASE_URL": "postgresql://u@db/cat", "FEEDROUTER_PLANS_URI": "s3://b/plans"}
    assert database_url(env) == "postgresql+psycopg://u@db/cat"
    assert plans_uri(env) == "s3://b/plans"
    assert normalize_url("postgres://u@db/cat") == "postgresql+psycopg://u@db/cat"
    assert normalize_url("postgresql+psycopg://u@db/cat") == "postgresql+psycopg://u@db/cat"


def test_the_layout_places_an_hour_below_the_prefix() -> None:
    feed = Feed(name="news", input_prefix="s3://in/news/", layout="{prefix}/dt={date}/hour={hour}/")
    assert feed.batch_prefix(datetime(2026, 11, 22, 16)) == "s3://in/news/dt=2026-11-22/hour=16/"


def test_the_layout_is_not_a_format_string() -> None:
    feed = Feed(name="news", input_prefix="s3://in/news", layout="{prefix}/{prefix.__class__}/{hour}")
    assert feed.batch_prefix(datetime(2026, 1, 1, 5)) == "s3://in/news/{prefix.__class__}/05"


def test_urls_in_messages_never_show_the_password() -> None:
    from feedrouter.catalog.database import create_catalog_engine, safe_url

    engine = create_catalog_engine("postgresql://feedrouter:s3cret@db:5432/catalog")
    assert safe_url(engine) == "postgresql+psycopg://feedrouter:***@db:5432/catalog"
