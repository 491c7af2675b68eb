"""Engines for the catalog: PostgreSQL, schema ``feedrouter`` (a server of yours, or the embedded
one feedrouter starts itself: :mod:`feedrouter.catalog.embedded`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, make_url

from feedrouter.catalog.settings import resolve_url
from feedrouter.errors import error


def create_catalog_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """An engine for the catalog at ``url`` (default: :func:`~feedrouter.catalog.settings.database_url`;
    ``"embedded"``: the embedded server, started and migrated on first use). An unset catalog is an
    error (FR401), never an empty database."""
    url = resolve_url(url)
    backend = make_url(url).get_backend_name()
    if backend != "postgresql":
        raise error(
            "FR401",
            f"the catalog runs on PostgreSQL, not {backend}: set FEEDROUTER_DATABASE_URL to a "
            "postgresql:// URL, or to 'embedded' for the PostgreSQL server feedrouter starts itself",
        )
    return create_engine(url, pool_pre_ping=True, **kwargs)


def create_read_only_engine(url: str | None = None) -> Engine:
    """An engine whose transactions are ``READ ONLY``."""
    return create_catalog_engine(url).execution_options(postgresql_readonly=True)


def open_catalog(url: str | None = None) -> Engine:
    """An engine for the configured catalog (the embedded server is migrated when it starts; a
    server of yours with ``feedrouter db upgrade``)."""
    return create_catalog_engine(url)


def safe_url(bind: Engine | Connection) -> str:
    """The engine's URL with the password masked, for messages and logs."""
    return bind.engine.url.render_as_string(hide_password=True)
