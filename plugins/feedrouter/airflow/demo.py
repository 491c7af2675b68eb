"""The main job on embedded defaults, through the real DAGs: ``python -m feedrouter.airflow.demo``.

No service is needed: the catalog is the embedded PostgreSQL server that feedrouter starts itself
(data under ``--home``, stopped at the end), the object store a local folder, Spark a local
session, Airflow's metadata a SQLite file, and the DAGs run with ``dag.test()``:

1. generate one hour of a sample news feed into the local store (``file://…/input/news/…``), and
   the same hour of two RSS-like feeds with an event time, ``wire`` and ``blogs``;
2. insert a DTD, the feeds, subscribers and subscriptions with SQL into the embedded catalog (two
   of them deliberately broken, to show how errors are reported; two of them join subscriptions
   that correlate wire items with blog items and wire items with each other);
3. run ``feedrouter_plans`` (it notices the new catalog versions and builds the plans), then
   ``feedrouter_route`` for that hour of every feed (Spark routes each, records the ledger, and
   the join stage pairs the hour's messages with the window's);
4. print what was delivered where.

The hour is the first of its UTC day, and the route DAG's first day is that day
(``FEEDROUTER_ROUTE_START``): a join's window then reaches back to no hour that was never routed,
so the join stage has no earlier witnesses to wait for.

Everything lives under ``--home`` (default ``var/airflow-demo``), recreated on each run.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from feedrouter.hours import format_hour

#: The checkout's root: dags/ and plugins/ are found there.
ROOT = Path(__file__).resolve().parents[3]

#: One subscription written by hand, exactly as the README writes them.
HAND_WRITTEN = """
INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)
SELECT s.id, f.id, 'all-titles', $q$//head/title$q$
FROM feedrouter.subscribers s, feedrouter.feeds f
WHERE s.name = 'news-subscriber-1' AND f.name = 'news'
"""

#: The feeds with an event time that the join subscriptions read (RSS-like items, no DTD).
STREAM_FEEDS = ("blogs", "wire")

#: The join subscriptions, by name: each one's feed and text (XQuery that Saxon runs unchanged).
JOINS = {
    "wire-then-blog": (
        "wire",
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        'for $w in fr:stream()//item, $b in fr:stream("blogs")//item\n'
        'where $b/author = $w/author and fr:followed-by($w, $b, "PT1H")\n'
        "return <story>{ $w/title }{ $b/link }</story>",
    ),
    "same-category": (
        "wire",
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        'for $a in fr:stream()//item[@lang = "en"], $b in fr:stream()//item\n'
        'where $b/category = $a/category and $b/author = $a/author and fr:within($a, $b, "PT30M")\n'
        "return <related>{ $a/guid }{ $b/guid }</related>",
    ),
}

#: The stream feeds, their subscriber and its subscriptions, as a user's SQL would insert them
#: (the join texts bound as parameters).
STREAM_CATALOG = (
    """
INSERT INTO feedrouter.feeds (name, input_prefix, event_time_path, event_time_format,
                              max_join_window, allowed_lateness)
VALUES ('wire', :wire, '//pubDate', 'rfc822', interval '6 hours', interval '1 hour'),
       ('blogs', :blogs, '//pubDate', 'rfc822', interval '6 hours', interval '1 hour')
""",
    "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('desk', :desk)",
    """
INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)
SELECT s.id, f.id, q.name, q.query
FROM feedrouter.subscribers s, feedrouter.feeds f,
     (VALUES ('wire-then-blog', 'wire', CAST(:wire_then_blog AS text)),
             ('same-category', 'wire', CAST(:same_category AS text)),
             ('blog-titles', 'blogs', '//item/title')) AS q(name, feed, query)
WHERE s.name = 'desk' AND f.name = q.feed
""",
)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    home = args.home.resolve()
    hour = _first_hour_of_the_day()
    _configure(home, hour, args.spark_master)  # before Airflow is imported: it reads its config once
    try:
        input_prefix = _generate_input(home, hour, args.documents)
        streams = _generate_streams(home, hour, args.documents)
        _insert_catalog(home, input_prefix, streams, args.subscriptions)
        plans = _run_dag("feedrouter_plans")
        route = _run_dag(
            "feedrouter_route",
            logical_date=hour,
            run_conf={"feed": "", "hour": format_hour(hour)},  # every feed
        )
        _summarize(home, hour)
    finally:
        _stop_catalog(home)
    return 0 if plans.state == route.state == "success" else 1


def _stop_catalog(home: Path) -> None:
    """Stop the demo's embedded catalog (any later use, e.g. the UI, starts it again)."""
    from feedrouter.catalog import embedded

    if embedded.stop(home):
        print(f"  stopped the embedded catalog in {embedded.data_folder(home)}")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m feedrouter.airflow.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--home", type=Path, default=ROOT / "var" / "airflow-demo", help="state folder (recreated)"
    )
    parser.add_argument("--documents", type=int, default=200, help="messages in the sample hour")
    parser.add_argument("--subscriptions", type=int, default=500, help="generated subscriptions")
    parser.add_argument("--spark-master", default="local[2]", help="Spark master URL (default local[2])")
    return parser.parse_args(argv)


def _first_hour_of_the_day() -> datetime:
    """The first hour of the last UTC day whose first hour is over (the route DAG's first day)."""
    last_complete = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    return last_complete.replace(hour=0)


def _configure(home: Path, hour: datetime, spark_master: str) -> None:
    """A fresh state folder, and Airflow plus the adapter pointed at the embedded defaults."""
    if "airflow" in sys.modules:
        raise RuntimeError("run the demo in a fresh interpreter: Airflow was already imported")
    # Keep the output to the point: libraries' deprecation notices are not the demo's business.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    _stop_catalog(home)  # a previous run's server must not keep running on a deleted folder
    shutil.rmtree(home, ignore_errors=True)
    airflow_home = home / "airflow"
    airflow_home.mkdir(parents=True)
    for name in [n for n in os.environ if n.startswith(("FEEDROUTER_", "AIRFLOW_CONN_FEEDROUTER"))]:
        del os.environ[name]  # the demo must not pick up a real deployment's catalog or buckets
    os.environ.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "FEEDROUTER_DATABASE_URL": "embedded",  # the demo's catalog is the embedded one, by name
            "FEEDROUTER_HOME": str(home),
            "FEEDROUTER_SPARK_MASTER": spark_master,
            "FEEDROUTER_INPUT_GRACE": "0",  # the sample hour is complete as soon as it is written
            "FEEDROUTER_ROUTE_START": hour.date().isoformat(),  # the streams start with the demo's hour
        }
    )
    _write_env_file(home / "env.sh")
    from airflow.utils import db

    print(f"Airflow metadata and logs: {airflow_home}", flush=True)
    db.initdb()


def _write_env_file(path: Path) -> None:
    """The demo's environment as a shell file, to look at the result with `airflow api-server`."""
    names = sorted(n for n in os.environ if n.startswith(("AIRFLOW_HOME", "AIRFLOW__", "FEEDROUTER_")))
    lines = [f"export {name}={shlex.quote(os.environ[name])}" for name in names]
    path.write_text("# . this file, then: airflow api-server\n" + "\n".join(lines) + "\n")


def _generate_input(home: Path, hour: datetime, count: int) -> str:
    """One hour of the sample news feed under the feed's layout; returns the feed's input prefix."""
    from feedrouter.hours import hour_path
    from feedrouter.storage.uris import file_uri
    from feedrouter.workload import dtds, generate_documents

    prefix = home / "input" / "news"
    folder = prefix / hour_path(hour)  # the feed's default layout
    folder.mkdir(parents=True)
    for i, document in enumerate(generate_documents(dtds.load("news"), count, seed=11)):
        (folder / f"msg-{i:05d}.xml").write_bytes(document)
    print(f"Generated {count} messages of feed news for {hour:%Y-%m-%d %H}:00 UTC under {folder}")
    return file_uri(prefix)


def _generate_streams(home: Path, hour: datetime, count: int) -> dict[str, str]:
    """The same hour of the RSS-like feeds the join subscriptions read (``pubDate`` in RFC 822,
    some of them late or missing); returns each feed's input prefix."""
    from feedrouter.hours import hour_path
    from feedrouter.storage.uris import file_uri
    from feedrouter.workload.joins import generate_feed_hours

    prefixes = {}
    generated = generate_feed_hours(seed=16, feeds=STREAM_FEEDS, hours=1, items_per_hour=count, start=hour)
    for feed, (batch,) in generated.items():
        prefix = home / "input" / feed
        folder = prefix / hour_path(hour)
        folder.mkdir(parents=True)
        for message in batch.messages:
            (folder / message.key).write_bytes(message.data)
        prefixes[feed] = file_uri(prefix)
    print(
        f"Generated {count} messages each of feeds {' and '.join(STREAM_FEEDS)} (RSS-like, with event times)"
    )
    return prefixes


def _insert_catalog(home: Path, input_prefix: str, streams: dict[str, str], count: int) -> None:
    """The sample catalog, inserted with SQL into the embedded catalog (started on this first use)."""
    from sqlalchemy import text

    from feedrouter.catalog import open_catalog
    from feedrouter.catalog.cli import INVALID_EXAMPLES
    from feedrouter.catalog.sample import SampleSpec, insert_sample
    from feedrouter.storage.uris import file_uri
    from feedrouter.workload import dtds, generate_subscriptions

    graph = dtds.load("news")
    spec = SampleSpec(
        feed="news",
        dtd_name="news",
        dtd_text=graph.text,
        dtd_root=graph.root,
        input_prefix=input_prefix,
        output_base=file_uri(home / "output"),
        subscribers=3,
        texts=generate_subscriptions(graph, count, seed=7, form="mixed"),
        invalid=INVALID_EXAMPLES,
    )
    engine = open_catalog()
    try:
        with engine.begin() as conn:
            counts = insert_sample(conn, spec)
            conn.execute(text(HAND_WRITTEN))
            values = {
                **streams,
                "desk": file_uri(home / "output" / "desk"),
                **{name.replace("-", "_"): query for name, (_, query) in JOINS.items()},
            }
            for statement in STREAM_CATALOG:
                conn.execute(text(statement), values)
    finally:
        engine.dispose()
    print(f"Inserted feed news with {counts['subscriptions'] + 1} subscriptions of 3 subscribers (SQL)")
    feeds = " and ".join(STREAM_FEEDS)
    print(f"Inserted feeds {feeds} with 3 subscriptions of subscriber desk, {len(JOINS)} of them joins (SQL)")


def _run_dag(dag_id: str, **kwargs: Any) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    print(f"Running DAG {dag_id} …", flush=True)
    dag = DagBag(dag_folder=str(ROOT / "dags")).dags[dag_id]
    run = dag.test(**kwargs)
    print(f"  {dag_id}: {run.state}")
    return run


def _summarize(home: Path, hour: datetime) -> None:
    """What was built, routed and delivered where, read back from the catalog's ledger."""
    from feedrouter.catalog import open_catalog

    engine = open_catalog()
    try:
        with engine.connect() as conn:
            reports = [_feed_report(conn, feed, hour) for feed in ("news", *STREAM_FEEDS)]
    finally:
        engine.dispose()
    print("\nSummary")
    for report in reports:
        _print_feed(report, hour)
    print(f"  outputs under {home / 'output'}")
    print(f"  the UI: . {home / 'env.sh'} && airflow api-server, then Browse > Feedrouter")


def _feed_report(conn: Any, feed: str, hour: datetime) -> SimpleNamespace:
    """A feed's latest plan build, its subscriptions' problems, and the hour's batch row and deliveries."""
    from feedrouter.catalog import latest_build, subscription_problems

    batch, deliveries = _ledger(conn, feed, hour)
    return SimpleNamespace(
        feed=feed,
        build=latest_build(conn, feed),
        problems=subscription_problems(conn, feed),
        batch=batch,
        deliveries=deliveries,
    )


def _print_feed(report: SimpleNamespace, hour: datetime) -> None:
    build, batch = report.build, report.batch
    if build is not None:
        print(
            f"  {report.feed}: plan build {build.id}: {build.valid} valid, {build.invalid} invalid -> "
            f"{build.artifact_uri}"
        )
    for row in report.problems:
        first_line = (row["error_message"] or "").splitlines()[0]
        print(f"  {row['status']}: {row['subscriber']}/{row['subscription']}: {first_line}")
    if batch is not None:
        # only a feed some join reads counts the messages joins leave out
        untimed = f"{batch['untimed']} without a usable event time, " if report.feed in STREAM_FEEDS else ""
        print(
            f"  batch {batch['id']} of {report.feed} {format_hour(hour)}: {batch['status']}, "
            f"{batch['documents']} documents, {batch['quarantined']} quarantined, {untimed}"
            f"{batch['results']} results"
        )
    plain = [d for d in report.deliveries if d.subscription_name not in JOINS]
    if plain:
        _print_deliveries(plain)
    for delivery in (d for d in report.deliveries if d.subscription_name in JOINS):
        name = f"{delivery.subscriber_name}/{delivery.subscription_name}"
        where = f" in {_folder(delivery.object_keys)}" if delivery.result_count else " this hour"
        print(f"    join {name}: {delivery.result_count} pairs{where}")


def _ledger(conn: Any, feed: str, hour: datetime) -> tuple[dict[str, Any] | None, list[Any]]:
    """The feed's batch row of the hour and its deliveries."""
    from feedrouter.catalog.status import batch_deliveries, batch_ledger

    batches = batch_ledger(conn, feed, hour)
    if not batches:
        return None, []
    return batches[0], [SimpleNamespace(**row) for row in batch_deliveries(conn, batches[0]["id"])]


def _print_deliveries(deliveries: list[Any], shown: int = 3) -> None:
    """The subscriptions that received the most results, and where their objects are."""
    ranked = sorted((d for d in deliveries if d.result_count), key=lambda d: -d.result_count)
    largest = "; the largest:" if ranked else ""
    print(f"    {len(ranked)} of {len(deliveries)} served subscriptions received results{largest}")
    for delivery in ranked[:shown]:
        name = f"{delivery.subscriber_name}/{delivery.subscription_name}"
        print(f"      {name}: {delivery.result_count} results in {_folder(delivery.object_keys)}")


def _folder(object_keys: list[str]) -> str:
    """The delivery folder of a subscription's objects (parts, manifest, _SUCCESS)."""
    return object_keys[0].rsplit("/", 1)[0] + "/" if object_keys else "(no object)"


if __name__ == "__main__":
    sys.exit(main())
