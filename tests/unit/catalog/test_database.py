"""Catalog engines: the UI's read-only engine refuses writes; only PostgreSQL is a catalog."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from feedrouter.catalog import Feed
from feedrouter.catalog.database import create_catalog_engine, create_read_only_engine
from feedrouter.errors import CatalogError


def test_a_read_only_engine_reads_and_refuses_writes(catalog_db_url: str) -> None:
    engine = create_read_only_engine(catalog_db_url)
    with engine.connect() as conn:
        assert conn.execute(select(Feed.name)).all() == []
    with pytest.raises(DBAPIError, match="read-only transaction"), engine.begin() as conn:
        conn.execute(text("INSERT INTO feeds (name, input_prefix) VALUES ('news', 'file:///in')"))
    engine.dispose()


def test_a_sqlite_url_is_refused_naming_the_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    refused = r"\[FR401\] the catalog runs on PostgreSQL, not sqlite.*'embedded'"
    with pytest.raises(CatalogError, match=refused):
        create_catalog_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    assert list(tmp_path.iterdir()) == []
