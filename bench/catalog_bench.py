"""The catalog at scale: load 100,000 subscriptions with plain SQL, build the feed's plan, load it back.

Measured on a real Postgres (a throwaway database, migrated with the project's migrations) and on
the embedded PostgreSQL catalog:

* ``load``: one transaction of plain INSERTs (executemany) of the DTD, feed, 100 subscribers and
  the subscriptions; the change-tracking triggers run as they would for a user's SQL;
* ``build``: ``build_plan`` end to end (read at one snapshot, compile, explain, serialize, write the
  artifact to a file:// store, write statuses back, record the build), with its phases;
* ``no-op``: the same build again (catalog unchanged);
* ``one more``: a build after inserting one subscription (plans are rebuilt whole);
* ``load plan``: reading, verifying and unpickling the artifact;
* a sanity check that the loaded plan routes generated documents.

The population is the selective one of the engine benchmark (NEWS DTD, each document matches a few
percent). Results go to ``bench/results/catalog.md``.

Postgres: ``--database-url`` (a server URL whose user may CREATE DATABASE), else a server on
127.0.0.1:5432 as user postgres, else one started with pgserver.

Usage: ``.venv/bin/python bench/catalog_bench.py [--subscriptions 100000] [--skip-embedded]``
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from sqlalchemy import Engine, insert, make_url, select, text  # noqa: E402

from feedrouter.catalog import (  # noqa: E402
    build_plan,
    builder,
    embedded,
    load_latest_plan,
    migrate,
    repository,
)
from feedrouter.catalog.database import create_catalog_engine  # noqa: E402
from feedrouter.catalog.models import Dtd, Feed, Subscriber, Subscription  # noqa: E402
from feedrouter.storage import FileStore  # noqa: E402
from feedrouter.workload import dtds, generate_documents, generate_selective_population  # noqa: E402

RESULTS = ROOT / "bench" / "results"
LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
SUBSCRIBERS = 100


@dataclass
class Run:
    """The figures of one backend."""

    backend: str
    figures: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)


@contextmanager
def timed(run: Run, name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    run.figures[name] = time.perf_counter() - started
    print(f"  {run.backend:9} {name:22} {run.figures[name]:8.2f} s", flush=True)


@contextmanager
def phase_timers(run: Run) -> Iterator[None]:
    """Time the phases of a build by wrapping the functions the builder calls (bench only)."""
    targets = [
        (repository, "active_subscriptions", "read subscriptions"),
        (builder, "compile_plan", "compile + explain"),
        (builder, "encode", "pickle + compress"),
        (repository, "write_outcomes", "write statuses"),
        (FileStore, "put", "write artifact"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    for owner, name, label in targets:
        setattr(owner, name, _timer(run, label, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _timer(run: Run, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            run.phases[label] = run.phases.get(label, 0.0) + time.perf_counter() - started

    return wrapper


# -- the database ----------------------------------------------------------------------------------


@contextmanager
def postgres_database(server_url: str | None) -> Iterator[str]:
    """A throwaway database on the given server, the local one, or a pgserver; dropped after."""
    if server_url is None and not _local_answers():
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="feedrouter-bench-pg-"), cleanup_mode="stop")
        try:
            with postgres_database(server.get_uri()) as url:
                yield url
        finally:
            server.cleanup()
        return
    admin = (server_url or LOCAL_URL).replace("postgresql+psycopg://", "postgresql://")
    name = f"feedrouter_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = make_url(admin).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _local_answers() -> bool:
    try:
        with psycopg.connect(LOCAL_URL, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


# -- the steps --------------------------------------------------------------------------------------


def load_catalog(engine: Engine, texts: list[str], run: Run) -> None:
    """Insert the DTD, the feed, the subscribers and the subscriptions in one transaction."""
    graph = dtds.load("news")
    with timed(run, "load"), engine.begin() as conn:
        conn.execute(insert(Dtd), [{"name": "news", "root_element": graph.root, "text": graph.text}])
        dtd_id = conn.scalar(select(Dtd.id))
        conn.execute(insert(Feed), [{"name": "news", "input_prefix": "s3://input/news", "dtd_id": dtd_id}])
        feed_id = conn.scalar(select(Feed.id))
        subscribers = [
            {"name": f"s{i:03d}", "output_prefix": f"s3://output/s{i:03d}"} for i in range(SUBSCRIBERS)
        ]
        conn.execute(insert(Subscriber), subscribers)
        ids = conn.scalars(select(Subscriber.id).order_by(Subscriber.id)).all()
        rows = [
            {"subscriber_id": ids[i % len(ids)], "feed_id": feed_id, "name": f"q{i:06d}", "query": query}
            for i, query in enumerate(texts)
        ]
        conn.execute(insert(Subscription), rows)


def build_and_load(engine: Engine, store: FileStore, run: Run, documents: list[bytes]) -> None:
    with phase_timers(run), timed(run, "build"):
        result = build_plan(engine, "news", store)
    run.notes.update(
        artifact_bytes=result.artifact_bytes,
        valid=result.valid,
        invalid=result.invalid,
        version=result.catalog_version,
    )
    with timed(run, "no-op build"):
        assert build_plan(engine, "news", store).reused
    with timed(run, "load plan"):
        _, plan = load_latest_plan(engine, "news", store)
    started = time.perf_counter()
    matches = sum(len(plan.route(doc)) for doc in documents)
    run.notes.update(routed=len(documents), matches=matches, route_seconds=time.perf_counter() - started)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
                " VALUES (1, 1, 'extra', '//title')"
            )
        )
    with timed(run, "build after one more"):
        assert not build_plan(engine, "news", store).reused


def bench_backend(run: Run, engine: Engine, texts: list[str], documents: list[bytes], folder: Path) -> None:
    load_catalog(engine, texts, run)
    with engine.connect() as conn:
        run.notes["version_after_load"] = conn.scalar(text("SELECT version FROM feedrouter.catalog_versions"))
        run.notes["server"] = conn.scalar(text("SHOW server_version"))
    build_and_load(engine, FileStore(folder / f"plans-{run.backend}"), run, documents)


# -- the report -------------------------------------------------------------------------------------


def report(runs: list[Run], count: int, generate_seconds: float, peak_mb: float) -> str:
    header = "| step | " + " | ".join(run.backend for run in runs) + " |"
    lines = [
        "# Catalog benchmark",
        "",
        f"{count:,} subscriptions (selective NEWS population, {SUBSCRIBERS} subscribers, one feed), "
        f"generated in {generate_seconds:.1f} s (not counted). Machine: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}; "
        f"Postgres {runs[0].notes.get('server', '?')}. Peak RSS {peak_mb:,.0f} MB.",
        "",
        "Seconds, wall clock:",
        "",
        header,
        "|" + "---|" * (len(runs) + 1),
    ]
    for step in runs[0].figures:
        lines.append(
            f"| {step} | " + " | ".join(f"{run.figures.get(step, float('nan')):.2f}" for run in runs) + " |"
        )
    lines += ["", "Phases of the first build:", "", header, "|" + "---|" * (len(runs) + 1)]
    for phase in runs[0].phases:
        lines.append(
            f"| {phase} | " + " | ".join(f"{run.phases.get(phase, float('nan')):.2f}" for run in runs) + " |"
        )
    first = runs[0].notes
    lines += [
        "",
        f"Artifact: {first['artifact_bytes'] / 1e6:.1f} MB (zlib-compressed pickle); "
        f"{first['valid']:,} valid, {first['invalid']} invalid subscriptions.",
        f"Loaded plan routed {first['routed']} generated documents in {first['route_seconds']:.2f} s "
        f"({first['matches']:,} results).",
        f"Postgres catalog version after the load: {first.get('version_after_load')} (one transaction of "
        "single-row INSERT statements: the triggers run per statement and bump once per transaction).",
        "",
        "Regenerate: `.venv/bin/python bench/catalog_bench.py`",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscriptions", type=int, default=100_000)
    parser.add_argument("--database-url", help="A Postgres server URL whose user may CREATE DATABASE.")
    parser.add_argument("--skip-embedded", action="store_true", help="Postgres only.")
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()

    graph = dtds.load("news")
    started = time.perf_counter()
    texts = generate_selective_population(graph, args.subscriptions, seed=11, form="mixed")
    generate_seconds = time.perf_counter() - started
    documents = generate_documents(graph, args.documents, seed=11)
    runs = []
    with tempfile.TemporaryDirectory(prefix="feedrouter-bench-") as scratch:
        folder = Path(scratch)
        with postgres_database(args.database_url) as url:
            migrate.upgrade(url)
            engine = create_catalog_engine(url)
            runs.append(Run("postgres"))
            bench_backend(runs[-1], engine, texts, documents, folder)
            engine.dispose()
        if not args.skip_embedded:
            # the embedded catalog: a PostgreSQL server of its own under the scratch folder
            engine = create_catalog_engine(embedded.ensure_started(folder))
            runs.append(Run("embedded"))
            try:
                bench_backend(runs[-1], engine, texts, documents, folder)
            finally:
                engine.dispose()
                embedded.stop(folder)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text_report = report(runs, args.subscriptions, generate_seconds, peak_mb)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "catalog.md").write_text(text_report, encoding="utf-8")
    print(text_report)


if __name__ == "__main__":
    main()
