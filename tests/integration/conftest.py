"""Real services for the integration tests: a Postgres server and an S3 API server on loopback.

Postgres: the server and the session's migrated catalog come from tests/conftest.py (shared with
the unit tests); each test starts from empty tables (``catalog``).

S3: moto's server mode (``ThreadedMotoServer``) on 127.0.0.1 with a free port and dummy credentials.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PostgresServer

pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg")


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
