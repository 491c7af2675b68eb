"""Hourly batches on Spark: documents per second on ``local[1]`` and ``local[2]``, against the plain
single-process loop on the same data.

One hour of a NEWS feed: ``--messages`` generated messages (small ones: depth 4, at most 2 repeats)
in container files of ``--records`` messages each, on a ``file://`` prefix; ``--subscriptions``
subscriptions of the selective population (each message matches a few), 100 subscribers; the
embedded PostgreSQL catalog. Measured, wall clock:

* ``loop``: :func:`feedrouter.delivery.route_locally` (read, cut, route every message in one
  process), then every delivery folder written with the same part writer (parts, manifest,
  ``_SUCCESS``) to a ``file://`` store: what a batch does, without Spark;
* ``loop (route only)``: the routing part of the above;
* ``spark local[N]``: :func:`feedrouter.spark.route_batch` end to end (load and check the plan,
  list the hour, the Spark job, clean-up, the ledger), in a session started before the clock
  (its start-up is reported apart).

The Spark deliveries are checked to be byte-identical to the loop's. Results go to
``bench/results/spark.md``.

Usage: ``.venv/bin/python bench/spark_bench.py [--messages 50000] [--subscriptions 10000]``
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

from sqlalchemy import Engine, text  # noqa: E402

from feedrouter.catalog import (  # noqa: E402
    CompiledPlan,
    build_plan,
    embedded,
    ledger,
    load_latest_plan,
)
from feedrouter.catalog.database import create_catalog_engine  # noqa: E402
from feedrouter.catalog.sample import SampleSpec, insert_sample  # noqa: E402
from feedrouter.delivery import (  # noqa: E402
    MANIFEST,
    SUCCESS,
    HourRun,
    Manifest,
    PartHeader,
    PartInfo,
    PlanRef,
    delivery_dir,
    route_locally,
    write_parts,
)
from feedrouter.spark import BatchOptions, batch, route_batch, spark_session  # noqa: E402
from feedrouter.spark.tasks import splitter_for  # noqa: E402
from feedrouter.storage import FileStore  # noqa: E402
from feedrouter.workload import dtds, generate_documents, generate_selective_population  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
HOUR_PATH = "dt=2026-11-22/hour=16"
SUBSCRIBERS = 100


@dataclass
class Figures:
    """Seconds per step and what the runs found."""

    seconds: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


@contextmanager
def timed(figures: Figures, name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    figures.seconds[name] = time.perf_counter() - started
    print(f"  {name:28} {figures.seconds[name]:8.2f} s", flush=True)


# -- setup ----------------------------------------------------------------------------------------


def write_hour(folder: Path, messages: int, records: int, seed: int) -> list[bytes]:
    """The hour's container files; returns the messages (for calibrating the population)."""
    documents = generate_documents(dtds.load("news"), messages, seed=seed, doc_depth=4, max_repeats=2)
    store = FileStore(folder)
    for start in range(0, messages, records):
        body = b"\n".join(documents[start : start + records])
        store.put(f"batch-{start // records:05d}.xml", b"<batch>\n" + body + b"\n</batch>\n")
    return documents


def load_catalog(engine: Engine, home: Path, texts: list[str]) -> None:
    graph = dtds.load("news")
    spec = SampleSpec(
        feed="news",
        dtd_name="news",
        dtd_text=graph.text,
        dtd_root=graph.root,
        input_prefix=(home / "input" / "news").as_uri(),
        output_base=(home / "output").as_uri(),
        subscribers=SUBSCRIBERS,
        texts=texts,
    )
    with engine.begin() as conn:
        insert_sample(conn, spec)
        conn.execute(text("UPDATE feedrouter.feeds SET record_element = 'nitf' WHERE name = 'news'"))


# -- the plain loop -------------------------------------------------------------------------------


def loop(plan: CompiledPlan, ref: PlanRef, hour_dir: Path, out: Path, figures: Figures) -> HourRun:
    """Route every message in this process, then write every delivery folder."""
    with timed(figures, "loop (route only)"):
        objects = ((path.name, io.BytesIO(path.read_bytes())) for path in sorted(hour_dir.iterdir()))
        run = route_locally(plan, splitter_for(plan, 64 << 20), objects)
    with timed(figures, "loop (write deliveries)"):
        for sid, results in run.results.items():
            write_folder(plan, ref, sid, results, out)
    figures.seconds["loop"] = (
        figures.seconds["loop (route only)"] + figures.seconds["loop (write deliveries)"]
    )
    return run


def write_folder(plan: CompiledPlan, ref: PlanRef, sid: str, results: list[Any], out: Path) -> None:
    target = plan.targets[sid]
    store = FileStore(out / target.subscriber)
    folder = delivery_dir(target.subscription, "news", HOUR)
    parts = []
    for part in write_parts(PartHeader("news", target.subscription, "2026-11-22T16"), results):
        store.put(f"{folder}/{part.name}", part.data)
        parts.append(PartInfo.of(part))
    manifest = Manifest(
        "news",
        "2026-11-22T16",
        target.subscriber,
        target.subscription,
        target.catalog_id,
        ref,
        tuple(parts),
    )
    store.put(f"{folder}/{MANIFEST}", manifest.to_bytes())
    store.put(f"{folder}/{SUCCESS}", b"")


_PLAN: CompiledPlan | None = None  # the plan the forked calibration processes route with


def parallel_loop(plan: CompiledPlan, hour_dir: Path, figures: Figures) -> None:
    """The route-only loop in two processes at once, each over half of the objects: what this
    machine gains from a second process on the same work, i.e. the ceiling for local[2]."""
    global _PLAN
    _PLAN = plan
    paths = sorted(hour_dir.iterdir())
    with (
        multiprocessing.get_context("fork").Pool(2) as pool,
        timed(figures, "loop x2 processes (route only)"),
    ):
        counts = pool.map(_route_paths, [paths[0::2], paths[1::2]])
    figures.notes["parallel_documents"] = sum(counts)


def _route_paths(paths: list[Path]) -> int:
    assert _PLAN is not None, "set by parallel_loop before forking"
    objects = ((path.name, io.BytesIO(path.read_bytes())) for path in paths)
    return route_locally(_PLAN, splitter_for(_PLAN, 64 << 20), objects).documents


# -- Spark ----------------------------------------------------------------------------------------


def spark_run(
    master: str, engine: Engine, plans: FileStore, home: Path, figures: Figures
) -> list[tuple[dict[str, Any], dict[str, bytes]]]:
    """Two batches on a fresh session, each after emptying the output folder and the ledger: the
    first starts the Python workers (cold), the second reuses them (warm). Their reports and the
    folders each delivered."""
    with timed(figures, f"spark {master} (session start)"):
        spark = spark_session(master, app_name="feedrouter-bench")
    assert spark.sparkContext.master == master, spark.sparkContext.master
    runs = []
    try:
        for name in (f"spark {master}", f"spark {master} warm"):
            _empty(engine, home)
            with phase_timers(figures, name), timed(figures, name):
                report = route_batch(
                    engine, "news", HOUR, plans_store=plans, spark=spark, options=BatchOptions()
                )
            runs.append((report.summary(), tree(home / "output")))
    finally:
        spark.stop()
    return runs


def _empty(engine: Engine, home: Path) -> None:
    shutil.rmtree(home / "output", ignore_errors=True)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM feedrouter.deliveries"))
        conn.execute(text("DELETE FROM feedrouter.batches"))


@contextmanager
def phase_timers(figures: Figures, run: str) -> Iterator[None]:
    """Time the driver's steps of a batch by wrapping what route_batch calls (bench only)."""
    targets = [
        (batch, "load_plan_build", "load + check the plan"),
        (batch, "run_job", "Spark job (route, shuffle, deliver)"),
        (batch, "_clean_up", "clean-up (withdraw, prune)"),
        (ledger, "record", "ledger transaction"),
    ]
    phases: dict[str, float] = figures.notes.setdefault(f"phases {run}", {})
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    for owner, name, label in targets:
        setattr(owner, name, _timer(phases, label, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _timer(phases: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - started

    return wrapper


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# -- report ---------------------------------------------------------------------------------------


def write_report(args: argparse.Namespace, figures: Figures, path: Path) -> None:
    s, n = figures.seconds, figures.notes
    documents = n["documents"]
    rows = [
        ("plain loop: route + write every delivery", "loop"),
        ("plain loop: route only", "loop (route only)"),
        ("plain loop: route only, 2 processes on halves of the objects", "loop x2 processes (route only)"),
        ("Spark local[1], first batch of the session", "spark local[1]"),
        ("Spark local[1], second batch (warm workers)", "spark local[1] warm"),
        ("Spark local[2], first batch of the session", "spark local[2]"),
        ("Spark local[2], second batch (warm workers)", "spark local[2] warm"),
    ]
    rate = {key: documents / s[key] for _, key in rows}
    scaling = rate["spark local[2] warm"] / rate["spark local[1] warm"]
    ceiling = rate["loop x2 processes (route only)"] / rate["loop (route only)"]
    lines = [
        "# Spark batch benchmark",
        "",
        *_setting(args, n),
        "",
        "Wall clock of `route_batch` end to end (plan load and check, listing, the Spark job, clean-up,",
        "the ledger); the session is started before the clock.",
        "",
        "| run | seconds | documents/s |",
        "|---|---|---|",
        *(f"| {label} | {s[key]:.2f} | {rate[key]:,.0f} |" for label, key in rows),
        "",
        f"* **Scaling** local[2] over local[1] (warm): **{scaling:.2f}x** documents per second "
        f"(first batches: {rate['spark local[2]'] / rate['spark local[1]']:.2f}x). This machine's "
        f"ceiling for the same work: the plain loop in two processes at once gets {ceiling:.2f}x "
        "the documents per second of one.",
        f"* **Spark's overhead** over the plain loop that also writes every delivery: local[1] takes "
        f"**{s['spark local[1] warm'] / s['loop']:.2f}x** the loop's time warm, "
        f"{s['spark local[1]'] / s['loop']:.2f}x in the session's first batch; local[2] "
        f"{s['spark local[2] warm'] / s['loop']:.2f}x warm.",
        f"* Session start-up, not in the figures: {s['spark local[1] (session start)']:.1f} s "
        f"(local[1], JVM included), {s['spark local[2] (session start)']:.1f} s (local[2], same JVM).",
        f"* Setup, not measured: generating the messages {s['generate']:.1f} s, the plan build "
        f"{s['build plan']:.1f} s ({n['artifact_bytes']:,} bytes).",
        f"* Every Spark batch delivered folders byte-identical to the loop's: {n['identical']}.",
        "",
        "Driver steps of each Spark batch, seconds:",
        "",
        *_phases(n, [key for _, key in rows if key.startswith("spark")]),
        "",
        "In the first batch of a session every Python worker starts, imports feedrouter and decodes",
        "the plan once (later batches reuse the workers and their decoded plan); every result is",
        "pickled through the shuffle to the delivery stage; the routing itself is the loop's code.",
        "",
        f"Regenerate: `.venv/bin/python bench/spark_bench.py --messages {args.messages} "
        f"--subscriptions {args.subscriptions}`",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


def _setting(args: argparse.Namespace, n: dict[str, Any]) -> list[str]:
    return [
        f"One hour of the NEWS feed: {n['documents']:,} messages ({n['bytes']:,} bytes) in {n['objects']} "
        f"container files of {args.records} messages on a file:// prefix; {args.subscriptions:,} "
        f"subscriptions (selective population, target match rate {args.match_rate}), {SUBSCRIBERS} "
        f"subscribers; embedded PostgreSQL catalog. {n['matches']:,} results to {n['deliveries']:,} "
        f"subscriptions ({n['parts']:,} part files). Machine: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, pyspark {n['pyspark']}, "
        f"{platform.system()} {platform.machine()}.",
    ]


def _phases(n: dict[str, Any], runs: list[str]) -> list[str]:
    labels = list(n[f"phases {runs[0]}"])
    header = ["| step | " + " | ".join(runs) + " |", "|---|" + "---|" * len(runs)]
    body = [
        f"| {label} | " + " | ".join(f"{n[f'phases {run}'][label]:.2f}" for run in runs) + " |"
        for label in labels
    ]
    return header + body


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=50000)
    parser.add_argument("--subscriptions", type=int, default=10000)
    parser.add_argument("--records", type=int, default=500, help="messages per container file")
    parser.add_argument("--match-rate", type=float, default=0.0005)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS / "spark.md")
    args = parser.parse_args()
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="feedrouter-spark-bench-") as tmp:
        home = Path(tmp)
        try:
            run_bench(args, home, figures)
        finally:
            embedded.stop(home)  # the embedded catalog's server lives under the scratch folder
    write_report(args, figures, args.output)


def run_bench(args: argparse.Namespace, home: Path, figures: Figures) -> None:
    import pyspark

    hour_dir = home / "input" / "news" / HOUR_PATH
    with timed(figures, "generate"):
        documents = write_hour(hour_dir, args.messages, args.records, args.seed)
        texts = generate_selective_population(
            dtds.load("news"),
            args.subscriptions,
            seed=args.seed,
            target_match_rate=args.match_rate,
            documents=documents[:200],
        )
    engine = create_catalog_engine(embedded.ensure_started(home))
    load_catalog(engine, home, texts)
    plans = FileStore(home / "plans")
    with timed(figures, "build plan"):
        result = build_plan(engine, "news", plans, explain=False)
    _, plan = load_latest_plan(engine, "news", plans)
    ref = PlanRef(result.id, result.digest, result.catalog_version)
    run = loop(plan, ref, hour_dir, home / "loop-output", figures)
    parallel_loop(plan, hour_dir, figures)  # before any JVM exists: forking is safe
    runs = [
        run for master in ("local[1]", "local[2]") for run in spark_run(master, engine, plans, home, figures)
    ]
    expected = tree(home / "loop-output")
    figures.notes.update(
        documents=run.documents,
        bytes=run.bytes,
        objects=len(list(hour_dir.iterdir())),
        matches=run.matches,
        deliveries=len(run.results),
        parts=sum(1 for name in expected if "/part-" in name),
        artifact_bytes=result.artifact_bytes,
        pyspark=pyspark.__version__,
        identical=all(report["documents"] == run.documents and out == expected for report, out in runs),
    )


if __name__ == "__main__":
    main()
