"""Catalog engines: the UI's read-only engine refuses writes on the embedded catalog too."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from feedrouter.catalog import Feed, open_catalog
from feedrouter.catalog.database import create_read_only_engine


def test_a_read_only_engine_reads_and_refuses_writes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    open_catalog(url).dispose()
    engine = create_read_only_engine(url)
    with engine.connect() as conn:
        assert conn.execute(select(Feed.name)).all() == []
    with pytest.raises(OperationalError, match="readonly"), engine.begin() as conn:
        conn.execute(text("INSERT INTO feeds (name, input_prefix) VALUES ('news', 'file:///in')"))
    engine.dispose()
