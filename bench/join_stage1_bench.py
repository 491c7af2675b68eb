"""Where stage 1's added cost goes (issue 16): the join bench's stage 1 taken apart.

For each population (``--populations``, the join bench's), the ``news`` feed's hour 12 is routed by
routers that hold the 10,000 ordinary subscriptions of ``bench/join_bench.py``'s stage 1 and some of
the feed's stage-1 work: the clock (``//pubDate`` read off the tree), the factored base (``//item``
read off the tree, its rows by the compiled kernel), both, and both with the rows filed by block.
Each part is measured three ways:

* **in context**: the routers take turns on the same 300 messages as the join bench's warm passes
  do (:func:`join_bench.per_message`: shuffled turns of 25, the median of per-turn ratios over the
  ordinary router), so a part's figure is what it adds to routing in a worker;
* **alone**: the same work with nothing around it: the clock and the base routed by a router
  whose one ordinary subscription never matches, paired against that router alone; filing in a
  loop over routed outcomes; the writer on a whole filed hour (:func:`join_bench.writer_seconds`).
  The gap between the two is what the ordinary routing around a part costs it (caches it finds
  cold);
* **in a worker**: each router alone in a fresh process, as a routing task has its plan: it routes
  the whole hour in batches of :data:`~feedrouter.spark.tasks.FILING_BATCH` messages, filing each
  batch's witnesses after routing it, once (the first pass) and then warm, the routers in turn
  round by round. Filing's time is read straight off the filing router's own clock, not as a
  difference of two routers. The rotation of *in context* puts other routers between a router's
  turns, which a worker never has;
* **first pass**: filing the first half of the hour's messages in a fresh process, once straight
  after routing the hour, once after the other half was filed first (other messages, mostly other
  keys), and warm (the second time): whether a new worker's extra cost is per key or per process.

Results: ``bench/results/join_stage1_parts.md`` and ``.csv``.

Usage: ``.venv/bin/python bench/join_stage1_bench.py [--quick] [--populations A,C]`` (about 7 min a
population on 2 cores; ``--quick``: the join bench's small sizes)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from lxml import etree

from common import RESULTS, markdown_table, write_csv
from feedrouter import heap
from feedrouter.join.plan import clock_block
from feedrouter.join.selections import witness_plans
from join_bench import (
    CLOCK_PATH,
    FULL,
    PASSES,
    POPULATIONS,
    QUICK,
    SEED,
    Sizes,
    artifact,
    build_workload,
    filed_as_a_task,
    in_fresh_process,
    loaded_after_compiling,
    ordinary_population,
    per_message,
    witness_router,
    worker_passes,
    writer_seconds,
)
from paper_bench import machine

FEED = "news"
NEVER = [("never", "//item[author = 'nobody at all']")]
LOOPS = 9  # passes of a tight loop (medians)
WORKER_ROUNDS = 4  # rounds of fresh processes, a router each (in_a_worker)
WORKER_PASSES = 4  # passes over the hour in each: the first, then warm ones


@dataclass(frozen=True)
class Hour:
    """The routers' artifacts and the hour's messages, as the join bench's stage 1 has them."""

    artifacts: dict[str, bytes]
    messages: list[bytes]
    hour: datetime  # the messages' (their event times are admitted in it)


def prepare(population_name: str, sizes: Sizes) -> Hour:
    """The population's news-hour routers: the ordinary population alone, with the clock, with the
    factored base, with both, and (for the parts alone) both beside one subscription that never
    matches."""
    population = next(p for p in POPULATIONS if p.name == population_name)
    workload = build_workload(population, sizes)
    ordinary = ordinary_population(sizes.ordinary, workload.vocabulary, SEED)
    plans = witness_plans(workload.joins.specs_for(FEED))
    clock, bases = clock_block(FEED, CLOCK_PATH), list(plans.bases.values())
    both = witness_router([*bases, clock], ordinary)
    artifacts = {
        "ordinary": artifact((witness_router((), ordinary), None)),
        "clock": artifact((witness_router([clock], ordinary), None)),
        "base": artifact((witness_router(bases, ordinary), None)),
        # one router, filing or not: each unpickled into its own copy
        "clock and base": artifact((both, None)),
        "clock and base, filed": artifact((both, plans)),
        # the parts alone: the same work against a router whose one subscription never matches
        # (both parse and run the NFA alike; an empty router would skip more than the parts)
        "never": artifact((witness_router((), NEVER), None)),
        "clock and base alone": artifact((witness_router([*bases, clock], NEVER), plans)),
    }
    hour = workload.feeds[FEED][len(workload.feeds[FEED]) // 2]
    return Hour(artifacts, [m.data for m in hour.messages], hour.hour)


IN_CONTEXT = ("ordinary", "clock", "base", "clock and base", "clock and base, filed")


def in_context(artifacts: dict[str, bytes], messages: Sequence[bytes], hour: datetime) -> dict[str, float]:
    """Microseconds a message each router adds to the ordinary router's routing (paired turns).
    Each is its own copy, as a worker's is (one router in two slots of a turn would find its
    caches warm from the other); copies of one router agree within 1 to 3% (:func:`join_bench.
    loaded_after_compiling`), which a difference of two routers' figures carries."""
    routers = loaded_after_compiling({name: artifacts[name] for name in IN_CONTEXT})
    timed = per_message(routers, messages, hour, PASSES)
    plain = timed["ordinary"].seconds
    found = {name: (timed[name].ratio - 1) * plain * 1e6 for name in IN_CONTEXT[1:]}
    return {"ordinary": plain * 1e6, **found}


def alone(
    artifacts: dict[str, bytes], messages: Sequence[bytes], whole_hour: Sequence[bytes], hour: datetime
) -> dict[str, float]:
    """Microseconds a message of each part with nothing around it: the clock and base paired in
    turns against the never-matching router (as :func:`in_context` pairs), the rest in tight loops
    (medians)."""
    wanted = ("ordinary", "never", "clock and base alone")
    routers = loaded_after_compiling({name: artifacts[name] for name in wanted})
    ordinary = routers["ordinary"][0]
    router, plans = routers["clock and base alone"]
    paired = per_message(
        {"ordinary": routers["never"], "clock and base": (router, None)}, messages, hour, PASSES
    )
    with heap.settled():
        routed = [router.route_outcome(data).witnesses for data in messages]
        loops = {
            "lxml's parse": _loop(lambda: [etree.fromstring(data) for data in messages]),
            "ordinary routing": _loop(lambda: [ordinary.route_outcome(data) for data in messages]),
            "filing": _loop(lambda: [filed_as_a_task(each, plans, hour) for each in routed]),
        }
        writer = writer_seconds(router, plans, whole_hour, hour, LOOPS)
    count = len(messages)
    per_message_us = {name: seconds / count * 1e6 for name, seconds in loops.items()}
    never = paired["ordinary"].seconds
    per_message_us["clock and base"] = (paired["clock and base"].ratio - 1) * never * 1e6
    per_message_us["writer"] = writer * 1e6
    return per_message_us


def _loop(work: Callable[[], object]) -> float:
    """Seconds of ``work``, the median of :data:`LOOPS` runs after one untimed."""
    work()
    spent = []
    for _ in range(LOOPS):
        started = time.perf_counter()
        work()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def first_filing(
    artifact_bytes: bytes, whole_hour: Sequence[bytes], hour: datetime, warm_with_other_half: bool
) -> tuple[float, float]:
    """Microseconds a message to file the first half of the hour's messages in a fresh process
    straight after routing the hour (or after filing the other half first), and the second time."""
    half = len(whole_hour) // 2
    routers = loaded_after_compiling({"r": artifact_bytes})
    router, plans = routers["r"]
    with heap.settled():
        routed = [router.route_outcome(data).witnesses for data in whole_hour]
        if warm_with_other_half:
            for found in routed[half:]:
                filed_as_a_task(found, plans, hour)
        times = []
        for _ in range(2):
            started = time.perf_counter()
            for found in routed[:half]:
                filed_as_a_task(found, plans, hour)
            times.append((time.perf_counter() - started) / half * 1e6)
    return times[0], times[1]


def _worker(artifact_bytes: bytes, whole_hour: Sequence[bytes], hour: datetime) -> list[tuple[float, float]]:
    """:func:`join_bench.worker_passes` over the whole hour, :data:`WORKER_PASSES` times."""
    return worker_passes(artifact_bytes, whole_hour, hour, WORKER_PASSES)[1]


IN_A_WORKER = ("ordinary", "clock and base", "clock and base, filed")


def in_a_worker(artifacts: dict[str, bytes], whole_hour: Sequence[bytes], hour: datetime) -> dict[str, float]:
    """Microseconds a message, each router alone in its fresh process (:func:`join_bench.worker_passes`),
    over :data:`WORKER_ROUNDS` rounds (the order reversed every other round): the ordinary
    router's routing, warm and first pass; what the clock and base add to it (the median of
    per-round, per-pass ratios, paired as the join bench pairs); filing as the filing router's
    own clock reads it; and the whole of stage 1 but the writer (routing and filing over the
    ordinary router's routing)."""
    runs: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in IN_A_WORKER}
    for round_ in range(WORKER_ROUNDS):
        for name in IN_A_WORKER if round_ % 2 == 0 else IN_A_WORKER[::-1]:
            runs[name].append(in_fresh_process(_worker, artifacts[name], whole_hour, hour))

    def ratio(name: str, passes: range) -> float:
        return statistics.median(
            sum(mine[p]) / base[p][0]
            for mine, base in zip(runs[name], runs["ordinary"], strict=True)
            for p in passes
        )

    def median(name: str, side: int, passes: range) -> float:
        return statistics.median(run[p][side] for run in runs[name] for p in passes) * 1e6

    first, warm = range(1), range(1, WORKER_PASSES)
    plain, plain_first = median("ordinary", 0, warm), median("ordinary", 0, first)
    return {
        "ordinary": plain,
        "ordinary, first pass": plain_first,
        "clock and base": (ratio("clock and base", warm) - 1) * plain,
        "filing": median("clock and base, filed", 1, warm),
        "filing, first pass": median("clock and base, filed", 1, first),
        "stage 1": (ratio("clock and base, filed", warm) - 1) * plain,
        "stage 1, first pass": (ratio("clock and base, filed", first) - 1) * plain_first,
    }


def measure(population: str, sizes: Sizes) -> list[dict]:
    hour = prepare(population, sizes)
    messages = hour.messages[: sizes.stage1_messages]
    context = in_fresh_process(in_context, hour.artifacts, messages, hour.hour)
    parts = in_fresh_process(alone, hour.artifacts, messages, hour.messages, hour.hour)
    filed = hour.artifacts["clock and base, filed"]
    cold, warm = in_fresh_process(first_filing, filed, hour.messages, hour.hour, False)
    after_other, _ = in_fresh_process(first_filing, filed, hour.messages, hour.hour, True)
    worker = in_a_worker(hour.artifacts, hour.messages, hour.hour)
    plain, writer = context["ordinary"], parts["writer"]
    rows = [
        (
            f"ordinary routing ({sizes.ordinary:,} subscriptions)",
            plain,
            parts["ordinary routing"],
            worker["ordinary"],
        ),
        ("ordinary routing, first pass", None, None, worker["ordinary, first pass"]),
        ("of which lxml's parse", None, parts["lxml's parse"], None),
        ("clock (//pubDate off the tree)", context["clock"], None, None),
        ("factored base (//item off the tree, rows)", context["base"], None, None),
        ("clock and base", context["clock and base"], parts["clock and base"], worker["clock and base"]),
        (
            "filing (warm)",
            context["clock and base, filed"] - context["clock and base"],
            parts["filing"],
            worker["filing"],
        ),
        ("writer (the hour's tables, no Parquet)", None, writer, None),
        ("filing, first pass", None, cold, worker["filing, first pass"]),
        ("filing, first pass after the other half", None, after_other, None),
        ("filing, second pass", None, warm, None),
        (
            "stage 1 with the writer (warm)",
            context["clock and base, filed"] + writer,
            None,
            worker["stage 1"] + writer,
        ),
        ("stage 1 with the writer, first pass", None, None, worker["stage 1, first pass"] + writer),
    ]
    plain_first = worker["ordinary, first pass"]
    return [
        {
            "population": population,
            "part": part,
            "in context us/msg": _rounded(in_ctx),
            "in context % of routing": _share(in_ctx, plain),
            "alone us/msg": _rounded(by_itself),
            "alone % of routing": _share(by_itself, plain),
            "in a worker us/msg": _rounded(in_worker),
            # a first pass's share is of the ordinary router's first pass
            "in a worker % of routing": _share(
                in_worker, plain_first if "first pass" in part else worker["ordinary"]
            ),
        }
        for part, in_ctx, by_itself, in_worker in rows
    ]


def _rounded(value: float | None) -> float | str:
    return "" if value is None else round(value, 1)


def _share(value: float | None, plain: float) -> str:
    return "" if value is None else f"{value / plain:.0%}"


TEXT = """\
`bench/join_stage1_bench.py`: the join bench's stage 1 taken apart, on each population's news hour
12 with 10,000 ordinary subscriptions. Filing includes each message's event time (its `pubDate`
parsed and admitted in the hour), as a routing task files it. `in context`: what the part adds to
routing, the routers taking turns on the same 300 messages (shuffled turns of 25, the median of
per-turn ratios over the ordinary router, times its time; each router its own copy, so filing's row,
a difference of two copies, carries their 1 to 3% disagreement). `alone`: the same work with nothing
around it (the clock and base routed by a router whose one ordinary subscription never matches,
paired in the same turns against that router alone; filing in a loop over routed outcomes; the
writer's settle and tables on the whole filed hour, divided by its messages, as `join_bench.py`
times them). The first-pass rows file the first half of the hour's messages in a fresh process right
after routing the hour, after filing its other half first, and again (warm). `in a worker`: each
router alone in a fresh process, as a routing task has its plan, routing the whole hour in batches
of 32 messages and filing each batch's witnesses after routing it, first pass and 3 warm passes, 4
rounds of fresh processes (the routers in turn, the order reversed every other round); the clock and
base and stage 1 are paired per round and pass over the ordinary router's routing (medians), filing
is read off the filing router's own clock. The stage-1 rows add the writer (`alone`) to what routing
and filing add. Percentages are of the ordinary router's time in context, `in a worker`'s of its
time in a worker (warm, or its first pass on a first pass's rows)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--populations", default="A,C", help="which populations (A,B,C,D)")
    parser.add_argument("--quick", action="store_true", help="the join bench's small sizes (results/quick/)")
    args = parser.parse_args()
    sizes, out = (QUICK, RESULTS / "quick") if args.quick else (FULL, RESULTS)
    info = machine()
    rows = [row for name in args.populations.split(",") for row in measure(name, sizes)]
    for row in rows:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    write_csv(rows, out / "join_stage1_parts.csv")
    text = "\n".join(["# Stage 1 taken apart", "", TEXT, "", markdown_table(rows, list(rows[0])), ""])
    (out / "join_stage1_parts.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
