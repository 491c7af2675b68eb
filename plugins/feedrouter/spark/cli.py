"""``feedrouter route-batch``: route one hour of a feed on Spark and record it in the ledger.

``feedrouter.cli`` registers it with :func:`register`; this module imports only click (and
feedrouter's errors) until the command runs. The catalog is ``FEEDROUTER_DATABASE_URL`` (embedded
SQLite when unset), plans ``FEEDROUTER_PLANS_URI``; with no master (``--master`` /
``FEEDROUTER_SPARK_MASTER``) the batch runs on a local Spark session, so on one machine with
``file://`` prefixes it needs no service at all. Local runs show a progress bar over the job's tasks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import click

from feedrouter.console import echo, reported


class _TaskBar:
    """A progress bar of finished Spark tasks on stderr, drawn from the first report on (an empty
    hour or a refused batch draws nothing)."""

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = click.progressbar(length=total, label="routing", file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._bar.pos)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[_TaskBar | None]:
    """A progress callback for the batch, or None."""
    bar = _TaskBar() if enabled else None
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()


@click.command("route-batch")
@click.option("--feed", "feed_name", required=True, help="The feed whose hour to route.")
@click.option("--hour", required=True, help="The hour in UTC, as YYYY-MM-DDTHH (e.g. 2026-11-22T16).")
@click.option(
    "--master",
    envvar="FEEDROUTER_SPARK_MASTER",
    help="Spark master URL (spark://host:7077, local[4], …); default: a local[2] session.",
)
@click.option(
    "--plans-uri",
    envvar="FEEDROUTER_PLANS_URI",
    help="Root of the plan artifacts (s3://… or file://…); default $FEEDROUTER_HOME/plans.",
)
@click.option("--input-tasks", type=click.IntRange(min=1), help="Tasks that route the objects.")
@click.option("--output-tasks", type=click.IntRange(min=1), help="Tasks that write the deliveries.")
@click.option(
    "--max-part-bytes",
    type=click.IntRange(min=1024),
    help="Part files are cut before they pass this size (default 64 MiB).",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on for local runs).")
def route_batch_command(
    feed_name: str,
    hour: str,
    master: str | None,
    plans_uri: str | None,
    input_tasks: int | None,
    output_tasks: int | None,
    max_part_bytes: int | None,
    progress: bool | None,
) -> None:
    """Route one hour of a feed on Spark: deliver to every subscriber and record the ledger."""
    from feedrouter.catalog.database import open_catalog
    from feedrouter.catalog.settings import plans_uri as default_plans_uri
    from feedrouter.hours import parse_hour
    from feedrouter.spark import BatchOptions, route_batch
    from feedrouter.spark.session import is_local
    from feedrouter.storage import open_store

    options = BatchOptions(master, input_tasks, output_tasks)
    if max_part_bytes is not None:
        options = replace(options, max_part_bytes=max_part_bytes)
    show = is_local(master) if progress is None else progress
    with reported(), _progress_bar(show) as bar:
        when = parse_hour(hour)  # before anything is opened: a typo costs nothing
        engine = open_catalog()
        try:
            report = route_batch(
                engine,
                feed_name,
                when,
                plans_store=open_store(plans_uri or default_plans_uri()),
                options=options,
                progress=bar,
            )
        finally:
            engine.dispose()
    echo(report.describe())
    for failure in report.failures:  # each subscriber whose store refused its delivery (FR607)
        echo(f"  not delivered: {failure}", err=True)


def register(group: click.Group) -> None:
    """Add ``route-batch`` to the main ``feedrouter`` group."""
    group.add_command(route_batch_command)
