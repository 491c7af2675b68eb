"""Where the catalog and the plans live, read through feedrouter's typed settings.

=========================== ===================================================================
``FEEDROUTER_DATABASE_URL``  the catalog: ``postgresql://user@host:5432/db`` (psycopg 3 is used),
                             or ``embedded`` for the embedded PostgreSQL server that feedrouter
                             starts itself, with its data in ``$FEEDROUTER_HOME/postgres``
                             (:mod:`feedrouter.catalog.embedded`). Unset: an error (FR401), never
                             a silent empty catalog.
``FEEDROUTER_HOME``          the state folder (an absolute path); default
                             ``$XDG_STATE_HOME/feedrouter``, else ``~/.local/state/feedrouter``
                             (never the current directory)
``FEEDROUTER_PLANS_URI``     root of the plan artifacts (default ``file://$FEEDROUTER_HOME/plans``)
=========================== ===================================================================

The values come from :func:`feedrouter.settings.load_settings`, which validates them (a relative
home is FR700 naming ``FEEDROUTER_HOME``). :func:`database_url` is the one place that decides
which catalog a process uses. Credentials belong in the URL only when it comes from a secret store
or an Airflow connection; a password-less URL with ``PGPASSWORD``/``~/.pgpass`` works too, as
libpq reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from feedrouter.errors import error
from feedrouter.settings import Settings, load_settings
from feedrouter.storage.uris import file_uri

DATABASE_URL_ENV = "FEEDROUTER_DATABASE_URL"
HOME_ENV = "FEEDROUTER_HOME"
PLANS_URI_ENV = "FEEDROUTER_PLANS_URI"
#: The value of ``FEEDROUTER_DATABASE_URL`` that selects the embedded catalog.
EMBEDDED = "embedded"


def settings(env: Mapping[str, str] | None = None) -> Settings:
    """The validated settings of ``env`` (default: the process environment)."""
    return load_settings(env)


def home(env: Mapping[str, str] | None = None) -> Path:
    """The state folder: absolute, and never derived from the current directory.

    Raises:
        SettingsError: [FR700] ``FEEDROUTER_HOME`` is set to a relative path.
    """
    return settings(env).home


def database_url(env: Mapping[str, str] | None = None) -> str:
    """The catalog's SQLAlchemy URL: the configured one, or the embedded server's (started and
    migrated if need be) when ``FEEDROUTER_DATABASE_URL=embedded``.

    Raises:
        CatalogError: [FR401] ``FEEDROUTER_DATABASE_URL`` is unset or empty.
    """
    configured = (settings(env).database_url or "").strip()
    if not configured:
        raise error(
            "FR401",
            f"no catalog configured: set {DATABASE_URL_ENV} to the catalog's URL "
            f"(postgresql://user@host:5432/db), or to '{EMBEDDED}' for the embedded PostgreSQL "
            f"catalog in ${HOME_ENV} (default ~/.local/state/feedrouter)",
        )
    if configured == EMBEDDED:
        return embedded_url(env)
    return normalize_url(configured)


def resolve_url(url: str | None, env: Mapping[str, str] | None = None) -> str:
    """The SQLAlchemy URL for ``url`` as given to a command or a hook: None means the environment's
    (:func:`database_url`), ``embedded`` the embedded server, anything else is normalized."""
    if url is None or not url.strip():
        return database_url(env)
    if url.strip() == EMBEDDED:
        return embedded_url(env)
    return normalize_url(url)


def embedded_url(env: Mapping[str, str] | None = None) -> str:
    """The URL of the embedded catalog in :func:`home`, starting and migrating it if need be."""
    from feedrouter.catalog.embedded import ensure_started

    return ensure_started(home(env))


def plans_uri(env: Mapping[str, str] | None = None) -> str:
    """The root URI plan artifacts are written under."""
    values = settings(env)
    return values.plans_uri or file_uri(values.home / "plans")


def state_uri(env: Mapping[str, str] | None = None) -> str:
    """The root URI of the join state: the witnesses stage 1 writes and the join stage reads."""
    values = settings(env)
    return values.state_uri or file_uri(values.home / "state")


def migrations_folder(env: Mapping[str, str] | None = None) -> Path | None:
    """``FEEDROUTER_MIGRATIONS``: the Alembic script folder, None for the checkout's."""
    return settings(env).migrations


def normalize_url(url: str) -> str:
    """Point bare ``postgres://``/``postgresql://`` URLs at the psycopg 3 driver."""
    for scheme in ("postgres://", "postgresql://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    return url
