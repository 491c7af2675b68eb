"""Run the catalog's Alembic migrations from code (``feedrouter db upgrade``, the embedded
server's first start).

The migrations live in the source tree (``migrations/``, with their SQL in ``sql/``) beside
``plugins/``; ``FEEDROUTER_MIGRATIONS`` points elsewhere (e.g. an image that copies them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from feedrouter.catalog.database import create_catalog_engine, safe_url
from feedrouter.catalog.settings import migrations_folder, resolve_url
from feedrouter.errors import CatalogError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_ENV = "FEEDROUTER_MIGRATIONS"


def migrations_dir() -> Path:
    """The Alembic script folder: ``$FEEDROUTER_MIGRATIONS`` or ``migrations/`` of the checkout."""
    folder = migrations_folder() or Path(__file__).resolve().parents[3] / "migrations"
    if not (folder / "env.py").is_file():
        raise CatalogError(f"no Alembic migrations at {folder}: set {MIGRATIONS_ENV}", code="FR400")
    return folder


def alembic_config(url: str | None = None) -> Config:
    """An Alembic Config for the catalog at ``url`` (the URL is passed as an attribute, not through
    the ini parser, so a password with ``%`` in it survives)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["database_url"] = resolve_url(url)
    return config


def head_revision() -> str | None:
    """The newest revision of the migrations."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(migrations_dir())).get_current_head()


def upgrade(url: str | None = None, revision: str = "head") -> str:
    """Bring the catalog at ``url`` to ``revision``; returns what was done, for the CLI."""
    from alembic import command

    url = resolve_url(url)
    engine = create_catalog_engine(url)
    where = safe_url(engine)  # the password masked: this ends up in logs
    engine.dispose()
    command.upgrade(alembic_config(url), revision)
    return f"migrated the catalog {where} to {revision}"


def downgrade(url: str | None, revision: str) -> None:
    """Take the catalog back to ``revision`` ("base" removes it)."""
    from alembic import command

    command.downgrade(alembic_config(url), revision)
