"""Real services for the integration tests: a Postgres server and an S3 API server on loopback.

Postgres, first that applies:

1. ``FEEDROUTER_TEST_DATABASE_URL`` (e.g. ``postgresql://postgres@db:5432/postgres``): a server whose
   user may ``CREATE DATABASE``; the tests create throwaway databases on it and drop them after.
2. A server answering on ``127.0.0.1:5432`` that lets user ``postgres`` in without a password
   (a CI service container, a developer's local server): the same, with throwaway databases.
3. Otherwise a private server started from the ``pgserver`` wheel in a temporary folder.

Each test session (each xdist worker) works in its own database ``feedrouter_test_<random>``,
migrated with ``alembic upgrade head``; each test starts from empty tables.

S3: moto's server mode (``ThreadedMotoServer``) on 127.0.0.1 with a free port and dummy credentials.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg")

import psycopg
from psycopg import sql
from sqlalchemy import Engine, make_url, text

from feedrouter.catalog import migrate
from feedrouter.catalog.database import create_catalog_engine
from feedrouter.catalog.models import Base

TEST_URL_ENV = "FEEDROUTER_TEST_DATABASE_URL"
LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass
class PostgresServer:
    """A server on which the tests may create and drop databases."""

    admin_url: str  # a libpq URL of an existing database on the server (the maintenance one)

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` on this server."""
        url = make_url(self.admin_url).set(drivername="postgresql+psycopg", database=database)
        return url.render_as_string(hide_password=False)

    def create_database(self, prefix: str = "feedrouter_test") -> str:
        name = f"{prefix}_{secrets.token_hex(4)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _local_server_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            pass
        with psycopg.connect(LOCAL_URL, connect_timeout=3):
            return True
    except (OSError, psycopg.Error):
        return False


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    configured = os.environ.get(TEST_URL_ENV)
    if configured:
        yield PostgresServer(configured.replace("postgresql+psycopg://", "postgresql://"))
        return
    if _local_server_answers():
        yield PostgresServer(LOCAL_URL)
        return
    pgserver = pytest.importorskip(
        "pgserver", reason="no Postgres given or on 127.0.0.1:5432, and no pgserver"
    )
    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    try:
        yield PostgresServer(server.get_uri())
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def catalog_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A migrated throwaway catalog database for this test session."""
    name = postgres_server.create_database()
    url = postgres_server.url(name)
    migrate.upgrade(url)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def catalog_engine(catalog_url: str) -> Iterator[Engine]:
    engine = create_catalog_engine(catalog_url)
    yield engine
    engine.dispose()


@pytest.fixture
def catalog(catalog_engine: Engine) -> Engine:
    """The session's catalog with every table emptied (TRUNCATE fires no change-tracking trigger)."""
    tables = ", ".join(f"feedrouter.{table.name}" for table in Base.metadata.sorted_tables)
    with catalog_engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    return catalog_engine


@pytest.fixture
def fresh_database(postgres_server: PostgresServer) -> Iterator[str]:
    """An empty throwaway database (no migrations applied), dropped after the test."""
    name = postgres_server.create_database("feedrouter_fresh")
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 API server on loopback, on a free port."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket on the moto server; the environment points boto3 at it with dummy credentials."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "feedrouter-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "feedrouter-test-secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("FEEDROUTER_S3_ENDPOINT_URL", s3_endpoint)
    from feedrouter.storage.s3 import S3Settings

    bucket = f"plans-{secrets.token_hex(4)}"
    S3Settings.from_env().client().create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture
def plans_dir(tmp_path: Path) -> Path:
    return tmp_path / "plans"
