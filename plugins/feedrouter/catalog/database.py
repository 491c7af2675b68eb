"""Engines for the catalog: Postgres (schema ``feedrouter``) or the embedded SQLite file.

The models name the schema ``feedrouter``; on SQLite the schema is translated away, so the same
models and queries run on both. SQLite connections get foreign keys switched on and explicit
``BEGIN`` statements (the pysqlite driver otherwise delays them), so a plan build can take the
write lock up front with ``BEGIN IMMEDIATE`` and read one consistent state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url

from feedrouter.catalog.models import SCHEMA, Base
from feedrouter.catalog.settings import resolve_url
from feedrouter.errors import CatalogError

#: Execution option naming the BEGIN mode of a SQLite transaction ("DEFERRED", "IMMEDIATE").
SQLITE_BEGIN = "feedrouter_sqlite_begin"


def create_catalog_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """An engine for the catalog at ``url`` (default: :func:`~feedrouter.catalog.settings.database_url`;
    ``"embedded"``: the embedded file). An unset catalog is an error (FR401), never an empty file."""
    url = resolve_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url, **kwargs)
    if make_url(url).get_backend_name() != "postgresql":
        raise CatalogError(f"the catalog runs on Postgres or SQLite, not {make_url(url).drivername}")
    return create_engine(url, pool_pre_ping=True, **kwargs)


def create_read_only_engine(url: str | None = None) -> Engine:
    """An engine that refuses writes: ``SET TRANSACTION READ ONLY`` on Postgres, ``PRAGMA
    query_only`` on SQLite (and it never creates the embedded catalog's tables either)."""
    engine = create_catalog_engine(url)
    if is_postgres(engine):
        return engine.execution_options(postgresql_readonly=True)
    event.listen(engine, "connect", _sqlite_query_only)
    return engine


def open_catalog(url: str | None = None) -> Engine:
    """An engine for the configured catalog; the embedded SQLite file gets its tables on first use
    (Postgres is migrated explicitly with ``feedrouter db upgrade``)."""
    engine = create_catalog_engine(url)
    if not is_postgres(engine):
        create_embedded_schema(engine)
    return engine


def is_postgres(bind: Engine | Connection) -> bool:
    return bind.dialect.name == "postgresql"


def safe_url(bind: Engine | Connection) -> str:
    """The engine's URL with the password masked, for messages and logs."""
    return bind.engine.url.render_as_string(hide_password=True)


def create_embedded_schema(engine: Engine) -> None:
    """Create the catalog tables on SQLite from the models (Postgres uses the migrations)."""
    if is_postgres(engine):
        raise CatalogError("on Postgres the schema comes from the migrations: run `feedrouter db upgrade`")
    Base.metadata.create_all(engine)


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"timeout": 60},
        execution_options={"schema_translate_map": {SCHEMA: None}},
        **kwargs,
    )
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: object) -> None:
    # Let SQLAlchemy's "begin" event issue BEGIN itself (the driver's own is deferred and implicit).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.close()


def _sqlite_query_only(dbapi_connection: Any, _record: object) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    mode = connection.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
    if mode not in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
        raise CatalogError(f"unknown SQLite BEGIN mode {mode!r}")
    connection.exec_driver_sql(f"BEGIN {mode}")
