"""Errors of the Spark batch job (codes FR6xx, listed in :data:`feedrouter.errors.CODES`), terminal
unless marked transient."""

from __future__ import annotations

from feedrouter.errors import FeedrouterError


class BatchError(FeedrouterError):
    """An hour of a feed cannot be routed as configured (the same input fails every time)."""

    default_code = "FR600"


class NoPlanBuildError(BatchError):
    """The feed has no plan build: run ``feedrouter build-plan --feed NAME`` first."""

    default_code = "FR601"


class DeliveryConflictError(BatchError):
    """Two served subscriptions would write the same folder (same output prefix and name)."""

    default_code = "FR602"


class BatchBusyError(BatchError):
    """Another run of the same feed and hour holds its lock; retry once it has finished."""

    default_code = "FR605"
    transient = True


class SparkVersionError(BatchError):
    """The installed pyspark Python files do not belong to the Spark JVM they drive, or the
    session is set up in a way exactly-once delivery cannot work with (speculation)."""

    default_code = "FR603"


class InjectedFailure(BatchError):
    """A failure a test asked for (:class:`~feedrouter.spark.tasks.Fault`); a retry succeeds."""

    default_code = "FR604"
    transient = True
