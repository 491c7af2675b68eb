"""The routing job as a spark-submit application: one feed's hour, routed and recorded.

::

    spark-submit --master spark://host:7077 \\
        --archives feedrouter-env.tar.gz#environment \\
        --conf spark.pyspark.python=./environment/bin/python \\
        "$(python -m feedrouter.spark.submit --application)" --feed news --hour 2026-11-22T16

(``python -m feedrouter.spark.app --feed … --hour …`` runs the same code with a session of its own.)

Everything but the batch comes from the environment of the submitted driver, as the library reads
it everywhere: the catalog ``FEEDROUTER_DATABASE_URL``, the plans ``FEEDROUTER_PLANS_URI``, the join
state ``FEEDROUTER_STATE_URI`` (where an hour of a feed with join blocks writes its witnesses), S3
``FEEDROUTER_S3_*`` and boto3's standard chain (``AWS_ACCESS_KEY_ID``, …). The Spark session is the
one spark-submit configured (master, deploy mode, conf): this module sets no Spark conf of its own.

The exit status says whether a retry can help, for schedulers that only see the process:
0 routed (or an empty hour), 75 transient (``EX_TEMPFAIL``: S3 throttling, an unreachable
catalog or a lost connection to it, another run holding the hour), 1 terminal (no plan build, a
refused artifact, an unknown feed: the same every time), 2 wrong arguments, 70 an unexpected
failure (a bug, a Spark failure that is none of feedrouter's errors). Its line on stderr,
``feedrouter: exit status 1 (terminal: …): [FR601] …``, says which and names the error's code.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as a file by spark-submit: keep this folder's modules (errors.py,
    # session.py, …) from shadowing top-level ones; feedrouter itself is imported as a package.
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]

import argparse
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from feedrouter.errors import FeedrouterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from feedrouter.spark.stores import StoreOpener

log = logging.getLogger("feedrouter.spark.app")

#: What the driver prints on stdout before its summary, so a submitter can find it in the log.
REPORT_PREFIX = "FEEDROUTER_REPORT "
#: boto3's environment credentials, handed on to the executors by the job (never as Spark conf).
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


class ExitCode(IntEnum):
    """The application's exit status (sysexits-style where one exists)."""

    ROUTED = 0
    TERMINAL = 1
    USAGE = 2
    INTERNAL = 70
    TRANSIENT = 75

    @classmethod
    def of(cls, exc: BaseException) -> ExitCode:
        """The status a failure ends the application with."""
        if isinstance(exc, FeedrouterError):
            return cls.TRANSIENT if exc.transient else cls.TERMINAL
        from sqlalchemy.exc import InterfaceError, OperationalError

        # the catalog unreachable or its connection lost (the driver says so, not feedrouter)
        if isinstance(exc, (OperationalError, InterfaceError)):
            return cls.TRANSIENT
        return cls.INTERNAL

    @property
    def retryable(self) -> bool:
        """True when another attempt may succeed (transient and unexpected failures)."""
        return self in (ExitCode.TRANSIENT, ExitCode.INTERNAL)


@dataclass(frozen=True)
class Arguments:
    """The batch the application routes."""

    feed: str
    hour: datetime


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit, with our usage status
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def parse_arguments(argv: Sequence[str]) -> Arguments:
    """``--feed NAME --hour YYYY-MM-DDTHH``; the hour is read strictly (a date alone is refused).

    Raises:
        HourError: [FR608] the hour is not one. SystemExit: a missing or unknown argument.
    """
    from feedrouter.hours import parse_hour

    parser = _Parser(prog="feedrouter.spark.app", description="Route one hour of a feed on Spark.")
    parser.add_argument("--feed", required=True, help="the feed whose hour to route")
    parser.add_argument("--hour", required=True, help="the hour in UTC, as YYYY-MM-DDTHH")
    parsed = parser.parse_args(list(argv))
    return Arguments(parsed.feed, parse_hour(parsed.hour))


def store_opener(env: Mapping[str, str]) -> StoreOpener:
    """The stores of the driver and the executors: S3 settings and the driver's credentials from
    ``env``; the credentials travel to the tasks inside the job, never in Spark's conf."""
    from feedrouter.spark.stores import StoreOpener
    from feedrouter.storage.s3 import S3Settings

    credentials = {name: env[name] for name in CREDENTIAL_VARIABLES if env.get(name)}
    return StoreOpener(S3Settings.from_env(env), credentials=credentials)


@contextmanager
def submitted_session() -> Iterator[SparkSession]:
    """The session spark-submit configured (or ``SPARK_REMOTE``'s Connect server), pyspark checked
    against it; stopped on exit. Made only for an hour with input (``route_batch`` decides)."""
    from pyspark.sql import SparkSession

    from feedrouter.spark.session import check_versions

    spark = SparkSession.builder.getOrCreate()  # spark-submit's --name stays the application's
    try:
        check_versions(spark)
        yield spark
    finally:
        spark.stop()


def route(arguments: Arguments, env: Mapping[str, str]) -> dict[str, Any]:
    """Route the batch on the submitted session; the report's JSON summary."""
    from feedrouter.catalog.database import open_catalog
    from feedrouter.catalog.settings import plans_uri
    from feedrouter.spark import route_batch

    stores = store_opener(env)
    engine = open_catalog()
    try:
        plans = stores.open(plans_uri())
        report = route_batch(
            engine,
            arguments.feed,
            arguments.hour,
            plans_store=plans,
            stores=stores,
            session=submitted_session,
        )
    finally:
        engine.dispose()
    log.info("%s", report.describe())
    return report.summary()


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the application; its exit status (:class:`ExitCode`)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    env = os.environ if env is None else env
    try:
        summary = route(parse_arguments(sys.argv[1:] if argv is None else argv), env)
    except Exception as exc:
        return report_failure(exc)
    print(REPORT_PREFIX + json.dumps(summary, default=str), flush=True)
    return ExitCode.ROUTED


def report_failure(exc: BaseException) -> int:
    """Log ``exc`` and end its line on stderr with its code; the exit status it gets."""
    code = ExitCode.of(exc)
    if code is ExitCode.INTERNAL:
        log.exception("route-batch failed unexpectedly")
    kind = {
        ExitCode.TRANSIENT: "transient: a retry may succeed",
        ExitCode.INTERNAL: "unexpected: see the log above",
    }.get(code, "terminal: the same on every attempt")
    print(f"feedrouter: exit status {int(code)} ({kind}): {exc}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
