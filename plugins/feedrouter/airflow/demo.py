"""The main job on embedded defaults, through the real DAGs: ``python -m feedrouter.airflow.demo``.

No service is needed: the catalog is the embedded PostgreSQL server that feedrouter starts itself
(data under ``--home``, stopped at the end), the object store a local folder, Spark a local
session, Airflow's metadata a SQLite file, and the DAGs run with ``dag.test()``:

1. generate one hour of a sample news feed into the local store (``file://…/input/news/…``);
2. insert a DTD, the feed, subscribers and subscriptions with SQL into the embedded catalog (two
   of them deliberately broken, to show how errors are reported);
3. run ``feedrouter_plans`` (it notices the new catalog version and builds the plan), then
   ``feedrouter_route`` for that hour (Spark routes it and records the ledger);
4. print what was delivered where.

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


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    home = args.home.resolve()
    hour = _last_complete_hour()
    _configure(home, args.spark_master)  # before Airflow is imported: it reads its config once
    try:
        input_prefix = _generate_input(home, hour, args.documents)
        _insert_catalog(home, input_prefix, args.subscriptions)
        plans = _run_dag("feedrouter_plans")
        route = _run_dag(
            "feedrouter_route", logical_date=hour, run_conf={"feed": "news", "hour": format_hour(hour)}
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


def _last_complete_hour() -> datetime:
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    return now - timedelta(hours=1)


def _configure(home: Path, spark_master: str) -> None:
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


def _insert_catalog(home: Path, input_prefix: str, count: int) -> None:
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
    finally:
        engine.dispose()
    print(f"Inserted feed news with {counts['subscriptions'] + 1} subscriptions of 3 subscribers (SQL)")


def _run_dag(dag_id: str, **kwargs: Any) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    print(f"Running DAG {dag_id} …", flush=True)
    dag = DagBag(dag_folder=str(ROOT / "dags")).dags[dag_id]
    run = dag.test(**kwargs)
    print(f"  {dag_id}: {run.state}")
    return run


def _summarize(home: Path, hour: datetime) -> None:
    """What was built, routed and delivered where, read back from the catalog's ledger."""
    from feedrouter.catalog import latest_build, open_catalog, subscription_problems

    engine = open_catalog()
    try:
        with engine.connect() as conn:
            build = latest_build(conn, "news")
            problems = subscription_problems(conn, "news")
            batch, deliveries = _ledger(conn, hour)
    finally:
        engine.dispose()
    print("\nSummary")
    if build is not None:
        print(
            f"  plan build {build.id}: {build.valid} valid, {build.invalid} invalid -> {build.artifact_uri}"
        )
    for row in problems:
        first_line = (row["error_message"] or "").splitlines()[0]
        print(f"  {row['status']}: {row['subscriber']}/{row['subscription']}: {first_line}")
    if batch is not None:
        print(
            f"  batch {batch['id']} of news {format_hour(hour)}: {batch['status']}, {batch['documents']} "
            f"documents, {batch['quarantined']} quarantined, {batch['results']} results"
        )
    _print_deliveries(deliveries)
    print(f"  outputs under {home / 'output'}")
    print(f"  the UI: . {home / 'env.sh'} && airflow api-server, then Browse > Feedrouter")


def _ledger(conn: Any, hour: datetime) -> tuple[dict[str, Any] | None, list[Any]]:
    """The hour's batch row and its deliveries."""
    from feedrouter.catalog.status import batch_deliveries, batch_ledger

    batches = batch_ledger(conn, "news", hour)
    if not batches:
        return None, []
    return batches[0], [SimpleNamespace(**row) for row in batch_deliveries(conn, batches[0]["id"])]


def _print_deliveries(deliveries: list[Any], shown: int = 5) -> None:
    """The subscriptions that received the most results, and where their objects are."""
    ranked = sorted((d for d in deliveries if d.result_count), key=lambda d: -d.result_count)
    print(f"  {len(ranked)} of {len(deliveries)} served subscriptions received results; the largest:")
    for delivery in ranked[:shown]:
        name = f"{delivery.subscriber_name}/{delivery.subscription_name}"
        print(f"    {name}: {delivery.result_count} results in {_folder(delivery.object_keys)}")


def _folder(object_keys: list[str]) -> str:
    """The delivery folder of a subscription's objects (parts, manifest, _SUCCESS)."""
    return object_keys[0].rsplit("/", 1)[0] + "/" if object_keys else "(no object)"


if __name__ == "__main__":
    sys.exit(main())
