"""Hourly batches on Spark: route one hour of a feed from its input prefix to every subscriber.

``feedrouter route-batch --feed NAME --hour 2026-11-22T16 [--master URL]`` (:mod:`.cli`) calls
:func:`route_batch`. Modules by side:

* driver: :mod:`.batch` (the whole batch), :mod:`.job` (the Spark job, DataFrames only),
  :mod:`.lease` (holding the hour's lease: ``hour_lock``, its heartbeat, and the ``JobCanceller``
  that interrupts a lost run's operations by job tag; the rows are :mod:`feedrouter.catalog.lease`,
  the ledger :mod:`feedrouter.catalog.ledger`), :mod:`.session` (``local[…]``, ``spark://…`` or
  Spark Connect ``sc://…``; version check), :mod:`.progress`, :mod:`.batchlog` (log fields);
* tasks: :mod:`.tasks` (route, deliver), :mod:`.frames` (their ``mapInArrow`` side),
  :mod:`.publish` (a delivery folder), :mod:`.quarantine`;
* both: :mod:`.spec` (what tasks are told), :mod:`.stores` (stores by URI, streaming reads, S3
  credentials carried to the tasks).

The job uses only what Spark Connect offers (no RDD, broadcast variable or SparkContext), so the
same code runs in local mode, on a cluster and against an ``sc://`` endpoint. pyspark is imported
only when a session is made, so importing this package is cheap.
"""

from importlib import import_module
from typing import Any

# Names and the module that defines them; imported on first use so that registering the CLI
# command (and importing this package) loads neither Spark, the catalog nor boto3.
_EXPORTS = {
    "BatchOptions": "batch",
    "BatchReport": "batch",
    "route_batch": "batch",
    "BatchError": "errors",
    "DeliveryConflictError": "errors",
    "InjectedFailure": "errors",
    "NoPlanBuildError": "errors",
    "SparkVersionError": "errors",
    "DEFAULT_MASTER": "session",
    "check_versions": "session",
    "spark_session": "session",
    "Fault": "spec",
    "StoreOpener": "stores",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'feedrouter.spark' has no attribute {name!r}")
    return getattr(import_module(f"feedrouter.spark.{module}"), name)


__all__ = [
    "DEFAULT_MASTER",
    "BatchError",
    "BatchOptions",
    "BatchReport",
    "DeliveryConflictError",
    "Fault",
    "InjectedFailure",
    "NoPlanBuildError",
    "SparkVersionError",
    "StoreOpener",
    "check_versions",
    "route_batch",
    "spark_session",
]
