"""How the Airflow adapter finds the catalog, the object stores and Spark: environment variables
read when a task runs (never when a DAG file is parsed).

================================ =================================================================
``FEEDROUTER_CATALOG_CONN_ID``    Airflow connection (type postgres) of the catalog; unset: the
                                  library's own ``FEEDROUTER_DATABASE_URL`` (``embedded`` for the
                                  embedded SQLite file); neither set: an error (FR401)
``FEEDROUTER_UI_CATALOG_CONN_ID`` connection the UI page reads the catalog with (a read-only role);
                                  default: ``FEEDROUTER_CATALOG_CONN_ID``
``FEEDROUTER_S3_CONN_ID``         Airflow connection (type aws) for every ``s3://`` store; unset:
                                  boto3's standard chain and ``FEEDROUTER_S3_*`` variables
``FEEDROUTER_SPARK_CONN_ID``      Airflow connection (type spark) naming the cluster's master;
                                  unset: ``FEEDROUTER_SPARK_MASTER``, else a local Spark session
``FEEDROUTER_INPUT_MARKER``       object that marks an hour's input complete (e.g. ``_SUCCESS``);
                                  unset: an hour is complete once its grace period has passed
``FEEDROUTER_INPUT_GRACE``        minutes after an hour ends before it is routed (default 10)
``FEEDROUTER_INPUT_DEADLINE``     minutes after an hour ends by which its marker must exist (360)
``FEEDROUTER_CATALOG_POLL``       seconds between the catalog-change trigger's polls (default 30)
================================ =================================================================

A set connection id that names no connection is an error, never a silent fallback; so is a
component (task, triggerer, UI) with no catalog configured at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

CATALOG_CONN_ENV = "FEEDROUTER_CATALOG_CONN_ID"
UI_CATALOG_CONN_ENV = "FEEDROUTER_UI_CATALOG_CONN_ID"
S3_CONN_ENV = "FEEDROUTER_S3_CONN_ID"
SPARK_CONN_ENV = "FEEDROUTER_SPARK_CONN_ID"
SPARK_MASTER_ENV = "FEEDROUTER_SPARK_MASTER"
INPUT_MARKER_ENV = "FEEDROUTER_INPUT_MARKER"
INPUT_GRACE_ENV = "FEEDROUTER_INPUT_GRACE"
INPUT_DEADLINE_ENV = "FEEDROUTER_INPUT_DEADLINE"
CATALOG_POLL_ENV = "FEEDROUTER_CATALOG_POLL"


@dataclass(frozen=True)
class Connections:
    """Airflow connection ids to use; None means "use the library's environment defaults"."""

    catalog: str | None = None
    ui_catalog: str | None = None
    s3: str | None = None
    spark: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Connections:
        env = os.environ if env is None else env
        catalog = env.get(CATALOG_CONN_ENV) or None
        return cls(
            catalog=catalog,
            ui_catalog=env.get(UI_CATALOG_CONN_ENV) or catalog,
            s3=env.get(S3_CONN_ENV) or None,
            spark=env.get(SPARK_CONN_ENV) or None,
        )


@dataclass(frozen=True)
class InputPolicy:
    """When an hour's input counts as complete, and how long to wait for it at most."""

    marker: str | None = None
    grace: timedelta = timedelta(minutes=10)
    deadline: timedelta = timedelta(hours=6)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> InputPolicy:
        env = os.environ if env is None else env
        return cls(
            marker=env.get(INPUT_MARKER_ENV) or None,
            grace=timedelta(minutes=float(env.get(INPUT_GRACE_ENV) or 10)),
            deadline=timedelta(minutes=float(env.get(INPUT_DEADLINE_ENV) or 360)),
        )


def spark_master_env(env: Mapping[str, str] | None = None) -> str | None:
    """The Spark master named by the environment, or None for the library's local default."""
    env = os.environ if env is None else env
    return env.get(SPARK_MASTER_ENV) or None


def catalog_poll_seconds(env: Mapping[str, str] | None = None) -> float:
    env = os.environ if env is None else env
    return float(env.get(CATALOG_POLL_ENV) or 30)
