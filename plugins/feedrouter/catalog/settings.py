"""Where the catalog and the plans live, from the environment.

=========================== ===================================================================
``FEEDROUTER_DATABASE_URL``  the catalog: ``postgresql://user@host:5432/db`` (psycopg 3 is used);
                             unset: the embedded SQLite file ``$FEEDROUTER_HOME/feedrouter.db``
``FEEDROUTER_HOME``          local state folder for the embedded defaults (default ``./var``)
``FEEDROUTER_PLANS_URI``     root of the plan artifacts (default ``file://$FEEDROUTER_HOME/plans``)
=========================== ===================================================================

Credentials belong in the URL only when it comes from a secret store or an Airflow connection; a
password-less URL with ``PGPASSWORD``/``~/.pgpass`` works too, as libpq reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATABASE_URL_ENV = "FEEDROUTER_DATABASE_URL"
HOME_ENV = "FEEDROUTER_HOME"
PLANS_URI_ENV = "FEEDROUTER_PLANS_URI"


def home(env: Mapping[str, str] | None = None) -> Path:
    """The local state folder (absolute)."""
    env = os.environ if env is None else env
    return Path(env.get(HOME_ENV) or "var").resolve()


def database_url(env: Mapping[str, str] | None = None) -> str:
    """The catalog's SQLAlchemy URL: the configured one, else the embedded SQLite file."""
    env = os.environ if env is None else env
    configured = env.get(DATABASE_URL_ENV)
    if configured:
        return normalize_url(configured)
    return f"sqlite:///{home(env) / 'feedrouter.db'}"


def plans_uri(env: Mapping[str, str] | None = None) -> str:
    """The root URI plan artifacts are written under."""
    env = os.environ if env is None else env
    return env.get(PLANS_URI_ENV) or (home(env) / "plans").as_uri()


def normalize_url(url: str) -> str:
    """Point bare ``postgres://``/``postgresql://`` URLs at the psycopg 3 driver."""
    for scheme in ("postgres://", "postgresql://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    return url
