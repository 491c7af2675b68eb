"""Catalog commands for the ``feedrouter`` command line.

``feedrouter.cli`` registers them with ``register(main)``:

* ``feedrouter build-plan --feed NAME``: build (or reuse) the feed's plan;
* ``feedrouter db upgrade`` / ``db downgrade``: migrate the catalog;
* ``feedrouter db start`` / ``db stop`` / ``db status``: the embedded PostgreSQL server under
  ``$FEEDROUTER_HOME`` (:mod:`feedrouter.catalog.embedded`; any use of the embedded catalog starts
  it too, and it keeps running until ``db stop``);
* ``feedrouter catalog status``: catalog versions, latest builds, invalid subscriptions;
* ``feedrouter catalog init-sample``: insert a sample DTD, feed, subscribers and subscriptions.

The catalog is ``FEEDROUTER_DATABASE_URL`` (``embedded``: the embedded server); it is deliberately not a
command-line option, so a password never shows up in a process list. SQLAlchemy and boto3 are
imported inside the commands, so ``feedrouter route`` does not pay for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from feedrouter.console import echo, escape_name, reported

if TYPE_CHECKING:
    from feedrouter.catalog.embedded import EmbeddedStatus
    from feedrouter.catalog.repository import PlanBuildResult

STRATEGIES = ["auto", "F", "FW", "FWR"]


@click.command("build-plan")
@click.option("--feed", "feed_name", required=True, help="The feed whose plan to build.")
@click.option(
    "--plans-uri",
    envvar="FEEDROUTER_PLANS_URI",
    help="Root of the plan artifacts (s3://… or file://…); default $FEEDROUTER_HOME/plans.",
)
@click.option("--strategy", default="auto", type=click.Choice(STRATEGIES), show_default=True)
@click.option("--no-explain", is_flag=True, help="Do not store each subscription's explain text.")
def build_plan_command(feed_name: str, plans_uri: str | None, strategy: str, no_explain: bool) -> None:
    """Compile a feed's active subscriptions into a plan (a no-op when the catalog is unchanged)."""
    from feedrouter.catalog import build_plan, subscription_problems
    from feedrouter.catalog.database import open_catalog
    from feedrouter.catalog.settings import plans_uri as default_plans_uri
    from feedrouter.storage import open_store

    with reported():
        engine = open_catalog()
        store = open_store(plans_uri or default_plans_uri())
        result = build_plan(engine, feed_name, store, strategy=strategy, explain=not no_explain)
        with engine.connect() as conn:
            problems = subscription_problems(conn, feed_name)
    verb = "reused the plan build" if result.reused else "built plan"
    click.echo(
        f"{verb} {result.id} of feed {escape_name(feed_name)} at catalog version {result.catalog_version}: "
        f"{result.valid} valid, {result.invalid} invalid, {result.never_matches} never match "
        f"({result.artifact_bytes} bytes, {result.duration_seconds:.2f}s) -> "
        f"{escape_name(result.artifact_uri)}"
    )
    for row in problems[:20]:
        echo(f"  {row['status']}: {_subscription(row)}: {row['error_message']}", err=True)
    if len(problems) > 20:
        click.echo(f"  … and {len(problems) - 20} more (see the subscription_problems view)", err=True)


@click.group("db")
def db_group() -> None:
    """Create or migrate the catalog database (FEEDROUTER_DATABASE_URL)."""


@db_group.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Apply the migrations up to REVISION."""
    from feedrouter.catalog import migrate

    with reported():
        echo(migrate.upgrade(revision=revision))


@db_group.command("downgrade")
@click.option("--revision", required=True, help='Target revision; "base" removes the catalog schema objects.')
def db_downgrade(revision: str) -> None:
    """Revert the catalog to REVISION."""
    from feedrouter.catalog import migrate

    with reported():
        migrate.downgrade(None, revision)
    click.echo(f"downgraded the catalog to {escape_name(revision)}")


@db_group.command("start")
def db_start() -> None:
    """Start the embedded PostgreSQL server under FEEDROUTER_HOME and migrate its catalog."""
    from feedrouter.catalog import embedded
    from feedrouter.catalog.settings import home

    with reported():
        folder = home()
        embedded.ensure_started(folder)
        _describe_embedded(embedded.status(folder))


@db_group.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL server under FEEDROUTER_HOME."""
    from feedrouter.catalog import embedded
    from feedrouter.catalog.settings import home

    with reported():
        folder = home()
        stopped = embedded.stop(folder)
    echo(
        f"stopped the embedded catalog in {embedded.data_folder(folder)}"
        if stopped
        else f"the embedded catalog in {embedded.data_folder(folder)} was not running"
    )


@db_group.command("status")
def db_status() -> None:
    """Say whether the embedded PostgreSQL server under FEEDROUTER_HOME runs (exit 3 if not)."""
    from feedrouter.catalog import embedded
    from feedrouter.catalog.settings import home

    with reported():
        state = embedded.status(home())
    _describe_embedded(state)
    if not state.running:
        raise SystemExit(3)


@db_group.command("psql", context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def db_psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on the catalog (the embedded server's psql when none is on PATH); extra
    arguments go to psql, e.g. ``feedrouter db psql -f sql/examples.sql``."""
    import os
    import shutil

    from feedrouter.catalog import embedded
    from feedrouter.catalog.settings import database_url

    with reported():
        url = embedded.libpq_url(database_url())
        psql = shutil.which("psql") or str(embedded.psql_path())
    os.execv(psql, [psql, "-v", "ON_ERROR_STOP=1", *psql_args, url])


def _describe_embedded(state: EmbeddedStatus) -> None:
    if state.running and state.url:
        echo(f"the embedded catalog runs (pid {state.pid}) in {state.pgdata}")
        echo(f"  psql: psql '{embedded_libpq(state.url)}' (or: feedrouter db psql)")
    elif state.initialized:
        echo(f"the embedded catalog in {state.pgdata} is stopped (`feedrouter db start` starts it)")
    else:
        echo(f"no embedded catalog in {state.pgdata} yet (`feedrouter db start` creates it)")


def embedded_libpq(url: str) -> str:
    from feedrouter.catalog.embedded import libpq_url

    return libpq_url(url)


@click.group("catalog")
def catalog_group() -> None:
    """Look at and seed the catalog."""


@catalog_group.command("status")
@click.option("--feed", "feed_name", help="Only this feed.")
def catalog_status(feed_name: str | None) -> None:
    """Per feed: catalog version, latest plan build, and the subscriptions that are not served."""
    from feedrouter.catalog import catalog_versions, latest_builds, subscription_problems
    from feedrouter.catalog.database import open_catalog

    with reported(), open_catalog().connect() as conn:
        versions = catalog_versions(conn)
        builds = latest_builds(conn, feed_name)
        for name in [feed_name] if feed_name else list(versions):
            build = builds.get(name)
            built = "no plan build" if build is None else _describe_build(build, versions.get(name, 0))
            click.echo(f"{escape_name(name)}: catalog version {versions.get(name, 0)}; {built}")
        for row in subscription_problems(conn, feed_name):
            click.echo(_describe_problem(row))


def _describe_problem(row: Mapping[str, Any]) -> str:
    # The stored message starts with the position and the code; its excerpt lines are left out.
    first_line = escape_name((row["error_message"] or "").split("\n")[0])
    return f"  {row['status']}: {escape_name(row['feed'])} {_subscription(row)}: {first_line}"


def _subscription(row: Mapping[str, Any]) -> str:
    """``subscriber/subscription``, both names escaped for the terminal."""
    return f"{escape_name(row['subscriber'])}/{escape_name(row['subscription'])}"


def _describe_build(build: PlanBuildResult, version: int) -> str:
    state = "up to date" if build.catalog_version == version else "OUT OF DATE"
    return (
        f"plan build {build.id} at version {build.catalog_version} ({state}), "
        f"built {build.built_at:%Y-%m-%d %H:%M}, {build.valid} valid / {build.invalid} invalid / "
        f"{build.never_matches} never match"
    )


@catalog_group.command("init-sample")
@click.option("--feed", "feed_name", default="news", show_default=True)
@click.option(
    "--dtd", "dtd_name", default="news", type=click.Choice(["news", "book", "bib"]), show_default=True
)
@click.option("--subscriptions", "count", default=50, show_default=True)
@click.option("--subscribers", default=3, show_default=True)
@click.option("--seed", default=7, show_default=True)
@click.option(
    "--input-prefix",
    help="Where the feed's hourly batches arrive; default file://$FEEDROUTER_HOME/input/FEED.",
)
@click.option(
    "--output-base", help="Subscribers' prefixes go below it; default file://$FEEDROUTER_HOME/output."
)
@click.option(
    "--with-invalid", is_flag=True, help="Also insert two subscriptions with errors, to see them reported."
)
def catalog_init_sample(
    feed_name: str,
    dtd_name: str,
    count: int,
    subscribers: int,
    seed: int,
    input_prefix: str | None,
    output_base: str | None,
    with_invalid: bool,
) -> None:
    """Insert a sample DTD, feed, subscribers and generated subscriptions (idempotent)."""
    from feedrouter.catalog.database import open_catalog
    from feedrouter.catalog.sample import SampleSpec, insert_sample
    from feedrouter.catalog.settings import home
    from feedrouter.workload import dtds, generate_subscriptions

    with reported():
        graph = dtds.load(dtd_name)
        spec = SampleSpec(
            feed=feed_name,
            dtd_name=dtd_name,
            dtd_text=graph.text,
            dtd_root=graph.root,
            input_prefix=input_prefix or (home() / "input" / feed_name).as_uri(),
            output_base=output_base or (home() / "output").as_uri(),
            subscribers=subscribers,
            texts=generate_subscriptions(graph, count, seed=seed, form="mixed"),
            invalid=INVALID_EXAMPLES if with_invalid else (),
        )
        with open_catalog().begin() as conn:
            counts = insert_sample(conn, spec)
    name = escape_name(feed_name)
    click.echo(
        f"feed {name} ({dtd_name} DTD) has {counts['subscriptions']} subscriptions of "
        f"{counts['subscribers']} sample subscribers; next: feedrouter build-plan --feed {name}"
    )


#: Two texts the parser rejects, so that the sample shows how errors are reported.
INVALID_EXAMPLES = (
    "//story[tokenize(@lang, ' ') = 'en']",
    "for $s in //story\nwhere $s/title = 'x'\nreturn $t",
)


def register(group: click.Group) -> None:
    """Add the catalog commands to the main ``feedrouter`` group."""
    for command in (build_plan_command, db_group, catalog_group):
        group.add_command(command)
