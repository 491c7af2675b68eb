"""Airflow for the integration tests: a private AIRFLOW_HOME with SQLite metadata, set up once.

Importing this module points Airflow at a fresh temporary AIRFLOW_HOME (never ``~/airflow``), the
project's ``dags/`` and ``plugins/``, and a fixed JWT secret — before Airflow itself is imported,
because Airflow reads its configuration once, at import. The test modules import it first.
The metadata database is created once per test session (per xdist worker).

Fixtures: ``airflow_db`` (the migrated metadata), ``dagbag``, ``feedrouter_conns`` (Airflow
connections for the test Postgres catalog and the moto S3 server, and the environment pointing
the adapter at them).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

#: The fixtures; test modules take them with ``from tests.integration.airflow_support import *``.
__all__ = ["airflow_db", "dagbag", "feedrouter_conns"]

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="feedrouter-airflow-"))
if not os.environ.get("FEEDROUTER_TEST_KEEP_AIRFLOW_HOME"):  # set it to read the logs after a failure
    atexit.register(shutil.rmtree, AIRFLOW_HOME, ignore_errors=True)
JWT_SECRET = "feedrouter-tests-only-jwt-secret-" + "0123456789abcdef" * 3  # 64+ bytes for HS512


def _configure() -> None:
    if "airflow" in sys.modules and os.environ.get("AIRFLOW_HOME") != str(AIRFLOW_HOME):
        raise RuntimeError("Airflow was imported before tests.integration.airflow_support configured it")
    os.environ.update(
        {
            "AIRFLOW_HOME": str(AIRFLOW_HOME),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(AIRFLOW_HOME / "passwords.json"),
            "AIRFLOW__API_AUTH__JWT_SECRET": JWT_SECRET,
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(AIRFLOW_HOME / "logs"),
        }
    )


_configure()


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Airflow's metadata database, created once per session (``airflow db migrate`` takes seconds)."""
    from airflow.utils import db

    db.initdb()
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def dagbag(airflow_db: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(ROOT / "dags"))


@pytest.fixture
def feedrouter_conns(
    monkeypatch: pytest.MonkeyPatch, catalog_url: str, s3_bucket: str, s3_endpoint: str
) -> dict[str, str]:
    """Airflow connections for the catalog and S3, and the adapter pointed at them.

    The S3 endpoint and credentials live in the connection only: the environment's are removed,
    so a store that does not use the connection cannot reach the moto server.
    """
    from sqlalchemy import make_url

    url = make_url(catalog_url)
    catalog_uri = url.set(drivername="postgresql").render_as_string(hide_password=False)
    s3 = (
        '{"conn_type": "aws", "login": "feedrouter-test", "password": "feedrouter-test-secret",'
        f' "extra": {{"endpoint_url": "{s3_endpoint}", "region_name": "us-east-1"}}}}'
    )
    env = {
        "AIRFLOW_CONN_FEEDROUTER_CATALOG": catalog_uri,
        "AIRFLOW_CONN_FEEDROUTER_S3": s3,
        "FEEDROUTER_CATALOG_CONN_ID": "feedrouter_catalog",
        "FEEDROUTER_S3_CONN_ID": "feedrouter_s3",
        "FEEDROUTER_PLANS_URI": f"s3://{s3_bucket}/plans",
        "FEEDROUTER_SPARK_MASTER": "local[2]",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("FEEDROUTER_DATABASE_URL", "FEEDROUTER_S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    return {"bucket": s3_bucket, "endpoint": s3_endpoint}


def run_dag(dagbag: Any, dag_id: str, **kwargs: Any) -> Any:
    """``dag.test()`` one DAG of the bag; returns the finished DagRun."""
    return dagbag.dags[dag_id].test(**kwargs)


def task_states(run: Any) -> dict[tuple[str, int], str | None]:
    """``{(task_id, map_index): state}`` of a finished run, read back from the metadata database."""
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id).all()
        return {(ti.task_id, ti.map_index): ti.state for ti in rows}


def rendered_labels(run: Any, task_id: str) -> list[str]:
    """The rendered map indexes (feed labels) of one mapped task's instances in a run."""
    from airflow.models import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id, task_id=task_id)
        return sorted(ti.rendered_map_index for ti in rows if ti.map_index >= 0)


def iter_keys(client: Any, bucket: str, prefix: str) -> Iterator[str]:
    """Every key under a prefix of a bucket."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", ()):
            yield item["Key"]
