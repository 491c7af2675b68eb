"""Where the catalog and the plans live, from the environment.

=========================== ===================================================================
``FEEDROUTER_DATABASE_URL``  the catalog: ``postgresql://user@host:5432/db`` (psycopg 3 is used),
                             or ``embedded`` for the embedded SQLite file
                             ``$FEEDROUTER_HOME/feedrouter.db``. Unset: an error (FR401), never
                             a silent empty catalog.
``FEEDROUTER_HOME``          the embedded mode's state folder (an absolute path); default
                             ``$XDG_STATE_HOME/feedrouter``, else ``~/.local/state/feedrouter``
                             (never the current directory)
``FEEDROUTER_PLANS_URI``     root of the plan artifacts (default ``file://$FEEDROUTER_HOME/plans``)
=========================== ===================================================================

:func:`database_url` is the one place that decides which catalog a process uses (a later embedded
Postgres slots in there). Credentials belong in the URL only when it comes from a secret store or
an Airflow connection; a password-less URL with ``PGPASSWORD``/``~/.pgpass`` works too, as libpq
reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from feedrouter.errors import error
from feedrouter.storage.uris import file_uri

DATABASE_URL_ENV = "FEEDROUTER_DATABASE_URL"
HOME_ENV = "FEEDROUTER_HOME"
PLANS_URI_ENV = "FEEDROUTER_PLANS_URI"
#: The value of ``FEEDROUTER_DATABASE_URL`` that selects the embedded catalog.
EMBEDDED = "embedded"
#: The embedded catalog's file name below the home folder.
EMBEDDED_FILE = "feedrouter.db"


def home(env: Mapping[str, str] | None = None) -> Path:
    """The embedded mode's state folder: absolute, and never derived from the current directory.

    Raises:
        CatalogError: [FR401] ``FEEDROUTER_HOME`` is set to a relative path.
    """
    env = os.environ if env is None else env
    configured = env.get(HOME_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not path.is_absolute():
            raise error(
                "FR401",
                f"{HOME_ENV}={configured!r} is a relative path: set it to an absolute folder, so the "
                "state does not depend on the directory a command runs in",
            )
        return path
    state = env.get("XDG_STATE_HOME")
    if state and Path(state).is_absolute():
        return Path(state) / "feedrouter"
    return Path.home() / ".local" / "state" / "feedrouter"


def database_url(env: Mapping[str, str] | None = None) -> str:
    """The catalog's SQLAlchemy URL: the configured one, or the embedded SQLite file when
    ``FEEDROUTER_DATABASE_URL=embedded``.

    Raises:
        CatalogError: [FR401] ``FEEDROUTER_DATABASE_URL`` is unset or empty.
    """
    env = os.environ if env is None else env
    configured = (env.get(DATABASE_URL_ENV) or "").strip()
    if not configured:
        raise error(
            "FR401",
            f"no catalog configured: set {DATABASE_URL_ENV} to the catalog's URL "
            f"(postgresql://user@host:5432/db), or to '{EMBEDDED}' for the embedded SQLite catalog "
            f"in ${HOME_ENV} (default ~/.local/state/feedrouter)",
        )
    if configured == EMBEDDED:
        return embedded_url(env)
    return normalize_url(configured)


def resolve_url(url: str | None, env: Mapping[str, str] | None = None) -> str:
    """The SQLAlchemy URL for ``url`` as given to a command or a hook: None means the environment's
    (:func:`database_url`), ``embedded`` the embedded file, anything else is normalized."""
    if url is None or not url.strip():
        return database_url(env)
    if url.strip() == EMBEDDED:
        return embedded_url(env)
    return normalize_url(url)


def embedded_url(env: Mapping[str, str] | None = None) -> str:
    """The SQLAlchemy URL of the embedded catalog file in :func:`home`."""
    return f"sqlite:///{home(env) / EMBEDDED_FILE}"


def plans_uri(env: Mapping[str, str] | None = None) -> str:
    """The root URI plan artifacts are written under."""
    env = os.environ if env is None else env
    return env.get(PLANS_URI_ENV) or file_uri(home(env) / "plans")


def normalize_url(url: str) -> str:
    """Point bare ``postgres://``/``postgresql://`` URLs at the psycopg 3 driver."""
    for scheme in ("postgres://", "postgresql://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    return url
