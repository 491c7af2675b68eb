"""Alembic environment of the feedrouter catalog (Postgres schema ``feedrouter``).

The URL comes from ``config.attributes["database_url"]`` (set by ``feedrouter db upgrade``), else
``sqlalchemy.url``, else ``FEEDROUTER_DATABASE_URL``. Alembic's own version table lives in the
``feedrouter`` schema too, so the catalog can share a database with Airflow's metadata (which keeps
an ``alembic_version`` table in ``public``). Concurrent upgrades (several workers starting at once)
serialize on an advisory lock.
"""

from __future__ import annotations

import sys
from pathlib import Path

from alembic import context
from sqlalchemy import Connection, create_engine, pool, select, text
from sqlalchemy import func as sa_func

_PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
if str(_PLUGINS) not in sys.path:
    sys.path.insert(0, str(_PLUGINS))

from feedrouter.catalog.models import SCHEMA, Base  # noqa: E402
from feedrouter.catalog.settings import database_url, normalize_url  # noqa: E402

#: pg_advisory_xact_lock key of migrations: the bytes of "frmigrat" as a signed 64-bit integer.
MIGRATION_LOCK = int.from_bytes(b"frmigrat", "big", signed=True)

config = context.config


def _url() -> str:
    configured = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url")
    return normalize_url(configured or database_url())


def _include_name(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    # Compare and migrate only the feedrouter schema, whatever else shares the database.
    return name == SCHEMA if type_ == "schema" else True


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=Base.metadata,
        version_table_schema=SCHEMA,
        include_schemas=True,
        include_name=_include_name,
        compare_type=True,
        **kwargs,
    )


def run_offline() -> None:
    _configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection: Connection) -> None:
    if connection.dialect.name != "postgresql":
        raise SystemExit(
            f"the catalog runs on PostgreSQL, not {connection.dialect.name}; "
            "FEEDROUTER_DATABASE_URL=embedded starts one of its own"
        )
    # The version table lives in the schema, so the schema must exist before Alembic looks.
    connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"'))
    connection.commit()
    _configure(connection=connection)
    with context.begin_transaction():
        connection.execute(select(sa_func.pg_advisory_xact_lock(MIGRATION_LOCK)))
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
