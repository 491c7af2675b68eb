"""feedrouter's errors as Airflow task outcomes: terminal ones fail the task now, transient ones retry.

A terminal error (a missing plan build, an invalid DTD, a refused artifact, no permission on a
bucket) fails the same way on every attempt, so retrying only delays the alert:
:class:`AirflowFailException` skips the remaining retries. A transient one (S3 throttling, a lost
database connection, a racing plan build) is re-raised unchanged and Airflow's retries with backoff
take over.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from airflow.sdk.exceptions import AirflowFailException

from feedrouter.errors import FeedrouterError


@contextmanager
def task_outcome(what: str) -> Iterator[None]:
    """Run a library call; turn a terminal FeedrouterError into a clear, non-retried task failure.

    Args:
        what: what the call does, for the failure message ("plan build of feed news").
    """
    try:
        yield
    except FeedrouterError as exc:
        if exc.transient:
            raise
        raise AirflowFailException(f"{what} failed (not retried: the cause is not transient): {exc}") from exc
