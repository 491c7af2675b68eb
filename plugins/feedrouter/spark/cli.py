"""``feedrouter route-batch``: route one hour of a feed on Spark and record it in the ledger;
``feedrouter join-batch``: run the hour's join stage after it (issue 16).

``feedrouter.cli`` registers it with :func:`register`; this module imports only click (and
feedrouter's errors) until the command runs. The catalog is ``FEEDROUTER_DATABASE_URL`` (the
embedded catalog when unset), plans ``FEEDROUTER_PLANS_URI``; with no master (``--master`` /
``FEEDROUTER_SPARK_MASTER``) the batch runs on a local Spark session, so on one machine with
``file://`` prefixes it needs no service at all. A bar of the job's finished tasks is drawn on
stderr when it is a terminal (``--progress`` / ``--no-progress`` decide otherwise); an empty hour
names the prefix it listed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import click

from feedrouter.console import echo, escape_name, reported
from feedrouter.progress import task_bar, wanted

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy.engine import Engine

    from feedrouter.spark.batch import BatchReport


@click.command("route-batch")
@click.option("--feed", "feed_name", required=True, help="The feed whose hour to route.")
@click.option("--hour", required=True, help="The hour in UTC, as YYYY-MM-DDTHH (e.g. 2026-11-22T16).")
@click.option(
    "--master",
    help="Spark master URL (spark://host:7077, sc://host:15002, local[4], …); default: the "
    "FEEDROUTER_SPARK_MASTER setting, else a local[2] session.",
)
@click.option(
    "--plans-uri",
    help="Root of the plan artifacts (s3://… or file://…); default: the FEEDROUTER_PLANS_URI "
    "setting, else $FEEDROUTER_HOME/plans.",
)
@click.option("--input-tasks", type=click.IntRange(min=1), help="Tasks that route the objects.")
@click.option("--output-tasks", type=click.IntRange(min=1), help="Tasks that write the deliveries.")
@click.option(
    "--max-part-bytes",
    type=click.IntRange(min=1024),
    help="Part files are cut before they pass this size (default 64 MiB).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A bar of finished Spark tasks on stderr (default: when stderr is a terminal).",
)
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
    from feedrouter.settings import load_settings
    from feedrouter.spark import BatchOptions, route_batch
    from feedrouter.storage import open_store

    with reported(), task_bar("routing", wanted(progress)) as bar:
        when = parse_hour(hour)  # before anything is opened: a typo costs nothing
        settings = load_settings(spark_master=master, plans_uri=plans_uri)  # the options win
        options = BatchOptions(settings.spark_master, input_tasks, output_tasks)
        if max_part_bytes is not None:
            options = replace(options, max_part_bytes=max_part_bytes)
        engine = open_catalog()
        try:
            report = route_batch(
                engine,
                feed_name,
                when,
                plans_store=open_store(settings.plans_uri or default_plans_uri()),
                options=options,
                progress=bar,
            )
            listed = _listed_prefix(engine, report, when) if report.status == "empty" else None
        finally:
            engine.dispose()
    echo(report.describe())
    if listed is not None:  # an empty hour is most often the wrong prefix or hour: show where it looked
        echo(f"no input objects under {escape_name(listed)}")
    for failure in report.failures:  # each subscriber whose store refused its delivery (FR607)
        echo(f"  not delivered: {failure}", err=True)


def _listed_prefix(engine: Engine, report: BatchReport, hour: datetime) -> str:
    """Where the batch looked for the hour's input: the report's ``input_uri`` when the batch
    records it, else the feed's layout applied to the hour (what the batch listed)."""
    recorded = getattr(report, "input_uri", "")
    if recorded:
        return str(recorded)
    from feedrouter.catalog.repository import feed_locations
    from feedrouter.hours import batch_prefix

    with engine.connect() as conn:
        feed = next(f for f in feed_locations(conn) if f.name == report.feed)
    return batch_prefix(feed.layout, feed.input_prefix, hour)


@click.command("join-batch")
@click.option("--feed", "feed_name", required=True, help="The feed whose hour's join subscriptions to run.")
@click.option("--hour", required=True, help="The hour in UTC, as YYYY-MM-DDTHH (routed already).")
@click.option("--master", help="Spark master URL for the join queries and back-fills (see route-batch).")
@click.option("--plans-uri", help="Root of the plan artifacts (see route-batch).")
@click.option(
    "--engine",
    type=click.Choice(["partitioned", "spark", "python"]),
    default=None,
    help="partitioned: the shared stage on Spark's executors, subscriptions partitioned by value "
    "slice; spark: one Spark SQL query per template; python: in this process; the same pairs "
    "[default: FEEDROUTER_JOIN_ENGINE, else partitioned].",
)
@click.option(
    "--backfill/--no-backfill",
    default=True,
    show_default=True,
    help="Route again (witnesses only) the window's hours that were routed before a join's blocks existed.",
)
def join_batch_command(
    feed_name: str,
    hour: str,
    master: str | None,
    plans_uri: str | None,
    engine: str | None,
    backfill: bool,
) -> None:
    """Run the join stage of a routed hour: deliver the feed's join subscriptions' pairs."""
    from feedrouter.catalog.database import open_catalog
    from feedrouter.catalog.settings import plans_uri as default_plans_uri
    from feedrouter.hours import parse_hour
    from feedrouter.settings import load_settings
    from feedrouter.spark import BatchOptions
    from feedrouter.spark.joins import JoinOptions, join_batch
    from feedrouter.storage import open_store

    with reported():
        when = parse_hour(hour)
        settings = load_settings(spark_master=master, plans_uri=plans_uri)
        options = JoinOptions(
            engine=engine or settings.join_engine,
            master=settings.spark_master,
            backfill=BatchOptions(settings.spark_master) if backfill else None,
        )
        catalog = open_catalog()
        try:
            plans = open_store(settings.plans_uri or default_plans_uri())
            report = join_batch(catalog, feed_name, when, plans_store=plans, options=options)
        finally:
            catalog.dispose()
    echo(report.describe())


@click.group("spark")
def spark_group() -> None:
    """Spark deployment helpers (packing feedrouter for spark-submit)."""


def register(group: click.Group) -> None:
    """Add ``route-batch`` and the ``spark`` group (``feedrouter spark package``) to ``feedrouter``."""
    from feedrouter.spark.package import package_command

    spark_group.add_command(package_command())
    group.add_command(route_batch_command)
    group.add_command(join_batch_command)
    group.add_command(spark_group)
