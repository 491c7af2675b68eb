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

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def route(hook: FeedrouterHook, batch: HourBatch, master: str | None) -> dict[str, Any]:
    """Route one feed's hour with its latest plan build and record the ledger; a JSON summary.

    ``route_batch`` checks the plan build and lists the hour's input before any Spark starts, and
    opens the session (:func:`worker_session`) only for an hour with input: the task lists the
    hour's prefix once. ``master``: the task's Spark master (None: a local session).
    """
    from feedrouter.spark import BatchOptions, StoreOpener, route_batch

    access = hook.s3_access
    credentials = access.credentials if access else {}
    stores = StoreOpener(access.settings) if access else None
    engine = hook.catalog_engine()
    try:
        with exported(credentials):
            report = route_batch(
                engine,
                batch.feed,
                batch.hour,
                plans_store=hook.plans_store(),
                options=BatchOptions(master=master),
                stores=stores,
                session=lambda: worker_session(master, credentials),
            )
    finally:
        engine.dispose()
    return report.summary()


@contextmanager
def worker_session(master: str | None, credentials: Mapping[str, str]) -> Iterator[SparkSession]:
    """The Spark session of a batch (the running one, or one on ``master``), its Python workers
    given ``credentials``."""
    from feedrouter.spark.session import batch_session

    with batch_session(None, master) as spark, worker_environment(spark, credentials):
        yield spark


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
