"""Writing the join stage's folders (issue 16): how many writer threads a process should use.

The join stage writes one folder per join subscription with pairs in the hour (a part of results
with both messages' provenance, a manifest, ``_SUCCESS``) and checks the folder of every other
one: tens of thousands of folders an hour, a few object-store requests each, from the stage's
process (Spark SQL and in-process engines) or from each partitioned task
(:func:`~feedrouter.spark.joindelivery.deliver_joins`, ``JoinOptions.delivery_threads``). Each
writer thread count is timed on the same deliveries (``join_bench.py``'s populations, the last
hour's pairs of a slice of the population) into two stores:

* ``local disk``: a ``file://`` store, no wait per request (the writers only add hand-offs);
* ``remote (model)``: the same store with a fixed wait per request (``--latency-ms``, 15 ms by
  default: an object store's round trip; the wait releases the interpreter as a socket's does).
  A model of the latency, not of S3 itself: S3 was not reachable from the machine that measured.

Results: ``bench/results/join_delivery.md`` and ``join_delivery.csv``.

Usage: ``.venv/bin/python bench/join_delivery_bench.py [--populations C,D] [--subscriptions 1500]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from common import RESULTS, markdown_table, write_csv
from feedrouter.catalog import Target
from feedrouter.delivery import PlanRef
from feedrouter.join.stage import JoinStage
from feedrouter.spark.joindelivery import deliver_joins
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import WitnessHours, write_hour
from feedrouter.storage import FileStore, open_store
from join_bench import LATENESS, OWN, POPULATIONS, QUICK, build_workload, collect
from paper_bench import machine

THREADS = (1, 4, 8, 16)
#: six hours of 1,000 items per feed, 20,000 join subscriptions (of which a slice is delivered)
SIZES = replace(QUICK, subscriptions=20_000, items=1000, hours=6)


class WaitingStore(FileStore):
    """A ``file://`` store whose every request waits ``latency`` seconds first (a remote store's
    round trip, as a model): a write (``put`` goes through ``_put_stream``), a listing, a delete."""

    latency = 0.0

    def _put_stream(self, key: str, chunks: Iterable[bytes]) -> Any:
        time.sleep(self.latency)
        return super()._put_stream(key, chunks)

    def list(self, prefix: str = "") -> Iterator[str]:
        time.sleep(self.latency)
        return iter(list(super().list(prefix)))

    def delete(self, key: str) -> Any:
        time.sleep(self.latency)
        return super().delete(key)


class WaitingOpener(StoreOpener):
    """Opens every store as a :class:`WaitingStore` (where the folders go)."""

    def open(self, uri: str) -> WaitingStore:
        return WaitingStore(Path(uri.removeprefix("file://")))


def measure(name: str, subscriptions: int, latency_ms: float, scratch: Path) -> list[dict]:
    population = next(p for p in POPULATIONS if p.name == name)
    workload = build_workload(population, SIZES)
    store = collect(workload, workload.joins.specs)
    hour = max(batch.hour for batch in workload.feeds[OWN])
    state = open_store((scratch / name / "state").as_uri())
    for witnesses in store.values():
        write_hour(state, witnesses)
    plans = list(workload.joins.plans.values())[:subscriptions]
    stage = JoinStage(plans, workload.joins.specs, lateness=LATENESS)
    reader = WitnessHours(state)
    pairs = stage.pairs(hour, reader.joinable)
    for found in stage.deliveries(hour, reader.read, dict(pairs)):  # the hours read before timing
        del found
    spec = JobSpec(OWN, hour, "", None, PlanRef(1, "0" * 64, 1), WaitingOpener(), 1 << 24, 1 << 20)
    by_sid = {plan.sid: plan for plan in plans}
    rows = []
    for kind, latency in (
        ("local disk", 0.0),
        (f"remote (model: {latency_ms:g} ms a request)", latency_ms / 1e3),
    ):
        WaitingStore.latency = latency
        timings = {}
        for threads in THREADS:
            out = scratch / name / f"{'remote' if latency else 'local'}-{threads}"
            targets = {
                plan.sid: Target(n, plan.sid, f"subscriber{n % 100}", (out / f"s{n % 100}").as_uri())
                for n, plan in enumerate(plans, 1)
            }
            started = time.perf_counter()
            written = deliver_joins(
                spec, targets, by_sid, stage.deliveries(hour, reader.read, dict(pairs)), reader, threads
            )
            timings[threads] = time.perf_counter() - started
        rows.append(
            {
                "population": name,
                "store": kind,
                "subscriptions": len(plans),
                "folders written": sum(1 for one in written if one.row.object_keys),
                "results": sum(one.row.result_count for one in written),
                **{f"{threads} threads s": round(seconds, 2) for threads, seconds in timings.items()},
                "1 / 8 threads": round(timings[1] / timings[8], 2),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--populations", default="C,D")
    parser.add_argument("--subscriptions", type=int, default=1500, help="the slice of each population")
    parser.add_argument("--latency-ms", type=float, default=15.0, help="the remote model's wait per request")
    args = parser.parse_args()
    info = machine()
    rows = []
    with tempfile.TemporaryDirectory(prefix="feedrouter-join-delivery-") as scratch:
        for name in args.populations.split(","):
            rows += measure(name, args.subscriptions, args.latency_ms, Path(scratch))
            print(rows[-2:], flush=True)
    for row in rows:
        row["code"] = info["code"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_csv(rows, RESULTS / "join_delivery.csv")
    text = [
        "# Join subscriptions: writing the hour's folders",
        "",
        markdown_table([info], list(info)),
        "",
        __doc__.split("\n\n", 1)[1].split("\n\nResults:")[0],
        "",
        markdown_table(rows, list(dict.fromkeys(key for row in rows for key in row))),
    ]
    (RESULTS / "join_delivery.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
