"""Stage 2 of join subscriptions on Spark at the join benchmark's scale (issue 16): both Spark
engines of ``feedrouter join-batch``, the partitioned shared stage (the default: the in-process
algorithm on Spark's executors, the population partitioned by value slice) and Spark SQL (one
conjunctive query per template, paper 001 §4.3), against the in-process shared stage and against
each subscription evaluated separately, on the same witnesses of the same hour, with the same pairs
asserted for every subscription.

The populations, hours and witnesses are ``join_bench.py``'s (its ``--populations`` and sizes):
the last hour of ``--hours`` with its full lookback. Timed on Spark: the whole of
:func:`~feedrouter.spark.joinparts.partitioned_pairs` (the driver reads the hour's own witnesses
and divides the population, one task per core reads the window's witness Parquet as columns and
runs the shared stage over its part, the pairs fetched to the driver) and of
:func:`~feedrouter.spark.joinsql.spark_pairs` (the executors read the window's witness Parquet,
one query per template, the pairs fetched to the driver), each once after a warm-up run on the hour
before (the JVM's code generation and the session's start are not the hour's cost); in process:
:meth:`~feedrouter.join.stage.JoinStage.pairs`, cold (every value index and membership built, as
Spark builds its views every run). The separate estimate is ``join_bench.py``'s per-rule streaming
operator on a uniform sample.

Results: ``bench/results/join_spark.md`` and ``join_spark.csv``.

Usage: ``.venv/bin/python bench/join_spark_bench.py [--quick] [--populations D] [--master local[2]]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from common import RESULTS, markdown_table, write_csv
from feedrouter import heap
from feedrouter.join.stage import JoinStage
from join_bench import (
    FULL,
    LATENESS,
    OWN,
    POPULATIONS,
    QUICK,
    Sizes,
    build_workload,
    collect,
    draw_sample,
    forget,
    kept_rows,
    separate_sample,
    timed_pairs,
)
from paper_bench import machine


def measure(population_name: str, sizes: Sizes, master: str, driver_memory: str, state: Path) -> dict:
    from feedrouter.spark import spark_session
    from feedrouter.spark.joinparts import partitioned_pairs
    from feedrouter.spark.joinsql import WitnessSource, spark_pairs
    from feedrouter.spark.stores import StoreOpener
    from feedrouter.spark.witnesses import write_hour
    from feedrouter.storage import open_store

    population = next(p for p in POPULATIONS if p.name == population_name)
    workload = build_workload(population, sizes)
    store = collect(workload, workload.joins.specs)
    hours = [batch.hour for batch in workload.feeds[OWN]]
    hour = hours[-1]
    plans = list(workload.joins.plans.values())
    # the executors read the witnesses as the join stage's do: Parquet hours in the state store
    uri = f"file://{state / population.name}"
    written = sum(write_hour(open_store(uri), witnesses) for witnesses in store.values())
    source = WitnessSource(StoreOpener(), uri)
    stage = JoinStage(plans, workload.joins.specs, lateness=LATENESS)
    forget(store)
    in_process_s, shared = timed_pairs(stage, hour, store)
    spark = spark_session(
        master, app_name="feedrouter-join-spark-bench", conf={"spark.driver.memory": driver_memory}
    )
    timings = {}
    for name, engine in (("partitioned", partitioned_pairs), ("Spark SQL", spark_pairs)):
        engine(spark, plans, hours[-2], source, LATENESS)  # warm-up: the JVM's code, the session
        with heap.settled():
            started = time.perf_counter()
            on_spark = engine(spark, plans, hour, source, LATENESS)
            timings[name] = time.perf_counter() - started
        different = [sid for sid in shared if on_spark.get(sid, []) != shared[sid]]
        assert not different, f"{name} and the in-process stage disagree on {len(different)}: {different[:5]}"
        del on_spark
    parted_s, spark_s = timings["partitioned"], timings["Spark SQL"]
    scratch = state / f"{population.name}-delivered"
    delivered = deliveries(spark, stage, hour, source, shared, timings["partitioned"], scratch)
    separate = separate_sample(
        workload, draw_sample(workload.joins, sizes.sample), hour, store, shared, sizes.budget
    )
    separate_s = len(plans) * statistics.fmean(s for s, _ in separate.values())
    window = [hw for (_, h), hw in store.items() if hour - h <= LATENESS + max(p.window for p in plans)]
    return {
        "population": population.name,
        "subscriptions": len(plans),
        "templates": len({plan.template for plan in plans}),
        "roots rows in the window": sum(len(nodes) for hw in window for nodes in hw.roots.values()),
        "witness Parquet MB (all hours)": round(written / 1e6, 1),
        "pairs in the hour": sum(len(pairs) for pairs in shared.values()),
        "identical pairs (all subscriptions)": "yes",
        "partitioned s": round(parted_s, 1),
        "Spark SQL s": round(spark_s, 1),
        "in-process s (cold)": round(in_process_s, 2),
        "partitioned / in-process": round(parted_s / in_process_s, 1),
        "Spark SQL / in-process": round(spark_s / in_process_s, 1),
        "separate s (est., streaming operator)": round(separate_s, 1),
        "separate / partitioned": round(separate_s / parted_s, 1),
        "target >= 100x (partitioned)": "yes" if separate_s / parted_s >= 100 else "NO",
        "separate / Spark SQL": round(separate_s / spark_s, 1),
        **delivered,
        "master": master,
        "driver memory": driver_memory,
    }


def deliveries(
    spark: Any, stage: JoinStage, hour: datetime, source: Any, shared: dict, pairs_s: float, scratch: Path
) -> dict:
    """The hour's folders written two ways into ``file://`` stores: by the driver from the pairs
    the partitioned engine brought back (its pairs' time plus the driver's writing: what the stage
    did before its tasks delivered, and what the Spark SQL and in-process engines still do), and
    by the partitioned engine's tasks (``partitioned_deliveries``: pairing and writing in the
    tasks, a ledger row per subscription back). The two ledgers are asserted equal."""
    from feedrouter.catalog import Target
    from feedrouter.delivery import PlanRef
    from feedrouter.spark.joindelivery import DELIVERY_THREADS, deliver_joins
    from feedrouter.spark.joinparts import partitioned_deliveries
    from feedrouter.spark.spec import JobSpec
    from feedrouter.spark.stores import StoreOpener
    from feedrouter.spark.witnesses import WitnessHours

    plans = {plan.sid: plan for plan in stage.plans}
    spec = JobSpec(OWN, hour, "", None, PlanRef(1, "0" * 64, 1), StoreOpener(), 1 << 24, 1 << 20)

    def targets(root: str) -> dict:
        out = (scratch / root).as_uri()
        return {sid: Target(n, sid, f"subscriber{n % 1000}", out) for n, sid in enumerate(plans, 1)}

    witnesses = WitnessHours(source.stores.open(source.state_uri))
    started = time.perf_counter()
    found = stage.deliveries(hour, witnesses.read, dict(shared))
    by_driver = deliver_joins(spec, targets("driver"), plans, found, witnesses)
    driver_s = time.perf_counter() - started
    del witnesses
    started = time.perf_counter()
    by_tasks = partitioned_deliveries(spark, stage, hour, source, spec, targets("tasks"))
    tasks_s = time.perf_counter() - started

    def ledger(written: list) -> list:
        return sorted(
            (one.sid, one.pairs, one.row.status, one.row.result_count, one.row.digest) for one in written
        )

    assert ledger(by_driver) == ledger(by_tasks), "the tasks' folders differ from the driver's"
    return {
        "folders written": sum(1 for one in by_tasks if one.row.object_keys),
        "results delivered": sum(one.row.result_count for one in by_tasks),
        "driver delivers s (partitioned pairs + driver writes)": round(pairs_s + driver_s, 1),
        "tasks deliver s (partitioned_deliveries)": round(tasks_s, 1),
        "driver / tasks": round((pairs_s + driver_s) / tasks_s, 2),
        "writer threads per process": DELIVERY_THREADS,
    }


TEXT = """\
The last hour with its full lookback, the witnesses of `join_bench.py`'s populations, written as
the join stage finds them (Parquet hours in a `file://` state store). Partitioned (`join-batch`'s
default engine): `partitioned_pairs` for every subscription (the driver reads the hour's own
witnesses to find each subscription's driving value join and divides the population into one part
per core, whole value slices, heaviest first; each task reads the window's witness hours as columns
and runs the in-process shared stage over its part; each part's distinct pairs and pair lists come
back as a few Arrow rows). Spark SQL: `spark_pairs` for
every subscription (the executors read the window's witness relations, one task per feed and hour,
blocks and leaf paths by number; the value semi-join of every driving pair of leaf paths, this
hour's slice against the window, first, once for all templates; then one query per template: the
subscriptions of each combination of the matched nodes' block sets, the other value joins against
each pair's matching leaf paths, and the temporal term; pairs fetched as Arrow), timed after a
warm-up run on the hour before. In process: `JoinStage.pairs`, cold, witnesses already in memory.
Every subscription's pairs are asserted equal between each Spark engine and the in-process stage.
Separate: `join_bench.py`'s per-rule streaming operator on a uniform sample, times N.

Delivering the hour (the last columns): every join subscription's folder of the hour written to a
`file://` store (one result per pair with both messages' provenance, manifest, `_SUCCESS`; a
subscription with no pair or past its cap gets none), two ways. The driver: the partitioned
engine's pairs fetched (its time above) and the folders written by the stage's own process, one
subscription's results assembled at a time, 8 writer threads: what the join stage did before its
tasks delivered, and what it still does with the Spark SQL and in-process engines. The tasks:
`partitioned_deliveries`, each task pairing its part and writing its part's folders (8 writer
threads each), the driver receiving a ledger row per subscription. Both ledgers are asserted equal
(status, counts, digest of every subscription). Local-disk writes: an object store's latency per
write makes the writers' concurrency, and the tasks' spread over executors, count for more."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, results in results/quick/")
    parser.add_argument("--populations", default="D", help="which of join_bench.py's populations")
    parser.add_argument("--master", default="local[2]", help="the Spark master")
    parser.add_argument("--subscriptions", type=int, help="override the population size")
    parser.add_argument("--driver-memory", default="8g", help="the Spark driver's heap")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    if args.subscriptions:
        sizes = replace(sizes, subscriptions=args.subscriptions)
    info = machine()
    out = RESULTS / "quick" if args.quick else RESULTS
    measured = args.populations.split(",")
    with tempfile.TemporaryDirectory(prefix="feedrouter-join-spark-") as state:
        rows = [measure(name, sizes, args.master, args.driver_memory, Path(state)) for name in measured]
    for row in rows:
        row["code"] = info["code"]
        print(row, flush=True)
    rows = sorted(kept_rows(out / "join_spark.csv", set(measured)) + rows, key=lambda row: row["population"])
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "join_spark.csv")
    lines = [
        "# Join subscriptions: stage 2 on Spark",
        "",
        f"`bench/join_spark_bench.py{' --quick' if args.quick else ''}`: {sizes.hours} hours x "
        f"{sizes.items:,} items of 2 feeds, {sizes.subscriptions:,} join subscriptions per population.",
        "",
        markdown_table([info], list(info)),
        TEXT,
        "",
        markdown_table(rows, list(dict.fromkeys(key for row in rows for key in row))),
    ]
    (out / "join_spark.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
