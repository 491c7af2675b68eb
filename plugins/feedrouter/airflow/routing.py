"""The route step: one feed's hour through ``feedrouter.spark.route_batch``.

The only module of the adapter that touches Spark; imported by the route task when it runs, so the
scheduler, the triggerer and the API server never import pyspark.

S3 credentials of the aws connection reach the job two ways, both for this call only: the
driver's environment (its stores use boto3's standard chain), and the environment Spark gives the
job's Python workers (``SparkContext.environment``), so executors on a cluster need no keys of
their own. Neither shows up in Spark's configuration, UI or logs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from feedrouter.airflow.hooks import FeedrouterHook
from feedrouter.airflow.hours import HourBatch
from feedrouter.catalog import status
from feedrouter.errors import CatalogError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlalchemy import Engine


def route(hook: FeedrouterHook, batch: HourBatch) -> dict[str, Any]:
    """Route one feed's hour with its latest plan build and record the ledger; a JSON summary."""
    from feedrouter.spark import BatchOptions, StoreOpener, route_batch

    access = hook.s3_access
    credentials = access.credentials if access else {}
    stores = StoreOpener(access.settings) if access else None
    engine = hook.catalog_engine()
    try:
        require_plan_build(engine, batch.feed)
        with exported(credentials), session_for(hook, engine, batch, credentials) as spark:
            report = route_batch(
                engine,
                batch.feed,
                batch.hour,
                plans_store=hook.plans_store(),
                spark=spark,
                options=BatchOptions(master=hook.spark_master()),
                stores=stores,
            )
    finally:
        engine.dispose()
    return report.summary()


def require_plan_build(engine: Engine, feed: str) -> None:
    """Fail before starting Spark when the feed has no plan build (CatalogError: terminal)."""
    from feedrouter.catalog import latest_build

    with engine.connect() as conn:
        if latest_build(conn, feed) is None:
            raise CatalogError(
                f"feed {feed!r} has no plan build: run the feedrouter_plans DAG "
                f"(or `feedrouter build-plan --feed {feed}`), then clear this task",
                code="FR400",
            )


@contextmanager
def session_for(
    hook: FeedrouterHook, engine: Engine, batch: HourBatch, credentials: Mapping[str, str]
) -> Iterator[SparkSession | None]:
    """The Spark session of the batch, its workers given ``credentials``; None for an hour without
    input (route_batch records it as empty without starting Spark)."""
    if not has_input(hook, engine, batch):
        yield None
        return
    from feedrouter.spark.session import batch_session

    with batch_session(None, hook.spark_master()) as spark, worker_environment(spark, credentials):
        yield spark


def has_input(hook: FeedrouterHook, engine: Engine, batch: HourBatch) -> bool:
    """True when the hour's prefix holds at least one input object."""
    from feedrouter.delivery import is_input_key

    with engine.connect() as conn:
        prefix = status.batch_prefix(conn, batch.feed, batch.hour)
    return any(is_input_key(key) for key in hook.store(prefix).list(""))


@contextmanager
def exported(variables: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore the old values."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def worker_environment(spark: SparkSession, variables: Mapping[str, str]) -> Iterator[None]:
    """Environment variables for the Python workers of the jobs started in the block."""
    environment = spark.sparkContext.environment
    saved = {name: environment.get(name) for name in variables}
    environment.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
