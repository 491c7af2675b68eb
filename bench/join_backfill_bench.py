"""Back-filling a join subscription added later (issue 16): filed from the rows its hours keep, or
routed again.

A join subscription added today needs its blocks' witnesses in every hour its window reaches back
to. Where the hours keep each witness plan's rows whole (the state's format 2) and record what
they hold, a block whose plan's rows hold every leaf and fragment filing it needs is covered by
rewriting the hour's ``blocks.json`` (:func:`feedrouter.spark.witnesses.adopt_blocks`); otherwise
the hour is routed again from its inputs, as every back-fill did before.

For each population (``--populations``, the join bench's) and feed: the join bench's population
less a sample of ``--sample`` join subscriptions is "earlier"; the feed's middle hour is routed
with the earlier population's witness plans and written in format 2 to a store on a memory file
system. Each sampled subscription is then added alone: its blocks (merged with an earlier block of
the same text, as the plan build merges them) and the witness plans of the whole population (the
sample is a few per mille of it: its plan build's). Measured: the share of the sampled
subscriptions whose blocks the hour covers without routing (nothing to do, or filed from the rows
it keeps), the time of one such back-fill (reading and rewriting ``blocks.json``, the median), and
the time of routing the hour again with the witness plans alone (no ordinary subscription, no
input read, no Spark job: a lower bound of what a back-fill by routing costs an hour).

Results: ``bench/results/join_backfill.md`` and ``.csv``.

Usage: ``.venv/bin/python bench/join_backfill_bench.py [--populations A,C] [--sample 200] [--quick]``
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
import tempfile
import time
from pathlib import Path

from common import RESULTS, markdown_table, write_csv
from feedrouter.join.collect import collect_hour
from feedrouter.join.plan import JoinSet, clock_block, compile_join
from feedrouter.join.selections import witness_plans
from feedrouter.lang import parse
from feedrouter.spark.witnesses import adopt_blocks, coverage, plan_coverage, write_hour
from feedrouter.storage import open_store
from feedrouter.workload.joins import generate_join_subscriptions
from join_bench import (
    CLOCK_FORMAT,
    CLOCK_PATH,
    FEEDS,
    FULL,
    LATENESS,
    OWN,
    POPULATIONS,
    QUICK,
    SEED,
    Sizes,
    build_workload,
    in_memory_scratch,
    witness_router,
)
from paper_bench import machine

#: times the hour is routed again (the median is reported)
ROUTINGS = 3


def measure(population_name: str, sizes: Sizes, sample_size: int, scratch: Path) -> list[dict]:
    population = next(p for p in POPULATIONS if p.name == population_name)
    workload = build_workload(population, sizes)
    texts = generate_join_subscriptions(
        sizes.subscriptions,
        seed=SEED,
        feeds=FEEDS,
        own=OWN,
        vocabulary=workload.vocabulary,
        **population.knobs,
    )
    sampled = sorted(random.Random(SEED).sample(range(len(texts)), sample_size))
    left_out = set(sampled)
    earlier = JoinSet()
    for i, text in enumerate(texts):
        if i not in left_out:
            earlier.add(f"j{i}", parse(text), OWN)
    added = {i: compile_join(f"j{i}", parse(texts[i]), OWN)[1] for i in sampled}
    rows = []
    for feed in FEEDS:
        clock = clock_block(feed, CLOCK_PATH)
        hour = workload.feeds[feed][len(workload.feeds[feed]) // 2]
        messages = [(m.key, m.data) for m in hour.messages]
        before = earlier.specs_for(feed)
        plans = witness_plans(before)
        router = witness_router([*plans.bases.values(), clock])
        found = collect_hour(
            router, feed, hour.hour, messages, plans, clock, CLOCK_FORMAT, LATENESS, by_block=False
        )
        found.blocks = tuple(sorted(spec.id for spec in before))
        store = open_store((scratch / population_name / feed).as_uri())
        write_hour(store, found, coverage(before), plans.roots(), plan_coverage(plans))
        key = next(k for k in store.list("") if k.endswith("blocks.json"))
        written = store.get(key)
        everything = workload.joins.specs_for(feed)
        plans_all = witness_plans(everything)
        roots = plans_all.roots()
        by_id = {spec.id: spec for spec in before}
        covered, adopting, reading = 0, [], 0
        for i in sampled:
            own = [spec for spec in added[i] if spec.feed == feed]
            if not own:
                continue
            reading += 1
            wanted = dict(by_id)
            for spec in own:
                merged = copy.deepcopy(by_id[spec.id]) if spec.id in by_id else spec
                if merged is not spec:
                    merged.merge(spec)
                wanted[spec.id] = merged
            started = time.perf_counter()
            result = adopt_blocks(store, feed, hour.hour, list(wanted.values()), roots)
            spent = time.perf_counter() - started
            if result is not None:
                covered += 1
                if result:
                    adopting.append(spent)
                    store.put(key, written)  # as the hour was, for the next subscription
        routed_again = []
        router_all = witness_router([*plans_all.bases.values(), clock])
        for _ in range(ROUTINGS):
            started = time.perf_counter()
            again = collect_hour(
                router_all,
                feed,
                hour.hour,
                messages,
                plans_all,
                clock,
                CLOCK_FORMAT,
                LATENESS,
                by_block=False,
            )
            again.blocks = tuple(sorted(spec.id for spec in everything))
            write_hour(store, again, coverage(everything), plans_all.roots(), plan_coverage(plans_all))
            routed_again.append(time.perf_counter() - started)
        route_s = statistics.median(routed_again)
        adopt_ms = statistics.median(adopting) * 1e3 if adopting else None
        rows.append(
            {
                "population": population_name,
                "feed": feed,
                "distinct blocks": len(everything),
                "witness plans": len(plans_all.bases),
                "messages in the hour": len(messages),
                "sampled joins reading the feed": reading,
                "covered without routing": f"{covered / reading:.0%}" if reading else "",
                "of which blocks.json rewritten": len(adopting),
                "back-fill by blocks.json ms (median)": round(adopt_ms, 1) if adopt_ms is not None else "",
                "routing the hour again s (witness plans alone)": round(route_s, 2),
                "routing again / rewriting": f"{route_s * 1e3 / adopt_ms:.0f}x" if adopt_ms else "",
            }
        )
        print(rows[-1], flush=True)
    return rows


TEXT = """\
# Back-filling a join subscription added later

`bench/join_backfill_bench.py`: each population's join subscriptions less a sample of {sample}
are routed over each feed's middle hour (format 2, witness plans alone, written to a store on a
memory file system); each sampled subscription is then added alone, its blocks merged with earlier
blocks of the same text and filed by the whole population's witness plans. `covered without
routing`: the share of the sampled subscriptions reading the feed whose blocks the hour then covers
without routing it again: every block already held with its leaves and fragments, or filed from
the rows of its witness plan the hour keeps (`feedrouter.spark.witnesses.adopt_blocks`: only
`blocks.json` rewritten). `back-fill by blocks.json`: the time of one such back-fill (reading,
checking and rewriting `blocks.json`), the median over the subscriptions that needed one. `routing
the hour again`: the hour's messages routed by the witness plans and the clock alone and its
tables written, the median of {routings}: what a back-fill by routing costs at the least (a real
one also lists and reads the hour's inputs, routes the ordinary subscriptions too and runs a Spark
job). A subscription's window reaches back up to 25 hours of each feed it reads, each back-filled
so.

"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--populations", default="A,C", help="which populations (A,B,C,D)")
    parser.add_argument("--sample", type=int, default=200, help="join subscriptions added later")
    parser.add_argument("--quick", action="store_true", help="the join bench's small sizes (results/quick/)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    info = machine()
    rows: list[dict] = []
    for name in args.populations.split(","):
        with tempfile.TemporaryDirectory(prefix="join-backfill-", dir=in_memory_scratch()) as scratch:
            rows += measure(name, sizes, args.sample, Path(scratch))
    for row in rows:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    out = RESULTS / "quick" if args.quick else RESULTS
    write_csv(rows, out / "join_backfill.csv")
    text = TEXT.format(sample=args.sample, routings=ROUTINGS) + markdown_table(rows, list(rows[0]))
    (out / "join_backfill.md").write_text(text)


if __name__ == "__main__":
    main()
