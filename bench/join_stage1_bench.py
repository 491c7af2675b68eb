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
* **first pass**: filing the first half of the hour's messages in a fresh process, once straight
  after routing the hour, once after the other half was filed first (other messages, mostly other
  keys), and warm (the second time): whether a new worker's extra cost is per key or per process.

Results: ``bench/results/join_stage1_parts.md`` and ``.csv``.

Usage: ``.venv/bin/python bench/join_stage1_bench.py [--quick] [--populations A,C]`` (about 5 min a
population on 2 cores; ``--quick``: the join bench's small sizes)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lxml import etree

from common import RESULTS, markdown_table, write_csv
from feedrouter import heap
from feedrouter.join.plan import clock_block
from feedrouter.join.relations import MessageRef, message_witnesses
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
    in_fresh_process,
    loaded_after_compiling,
    ordinary_population,
    per_message,
    witness_router,
    writer_seconds,
)
from paper_bench import machine

FEED = "news"
NEVER = [("never", "//item[author = 'nobody at all']")]
LOOPS = 9  # passes of a tight loop (medians)


@dataclass(frozen=True)
class Hour:
    """The routers' artifacts and the hour's messages, as the join bench's stage 1 has them."""

    artifacts: dict[str, bytes]
    messages: list[bytes]


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
    return Hour(artifacts, [m.data for m in hour.messages])


IN_CONTEXT = ("ordinary", "clock", "base", "clock and base", "clock and base, filed")


def in_context(artifacts: dict[str, bytes], messages: Sequence[bytes]) -> dict[str, float]:
    """Microseconds a message each router adds to the ordinary router's routing (paired turns).
    Each is its own copy, as a worker's is (one router in two slots of a turn would find its
    caches warm from the other); copies of one router agree within 1 to 3% (:func:`join_bench.
    loaded_after_compiling`), which a difference of two routers' figures carries."""
    routers = loaded_after_compiling({name: artifacts[name] for name in IN_CONTEXT})
    timed = per_message(routers, messages, PASSES)
    plain = timed["ordinary"].seconds
    found = {name: (timed[name].ratio - 1) * plain * 1e6 for name in IN_CONTEXT[1:]}
    return {"ordinary": plain * 1e6, **found}


def alone(artifacts: dict[str, bytes], messages: Sequence[bytes], hour: Sequence[bytes]) -> dict[str, float]:
    """Microseconds a message of each part with nothing around it: the clock and base paired in
    turns against the never-matching router (as :func:`in_context` pairs), the rest in tight loops
    (medians)."""
    wanted = ("ordinary", "never", "clock and base alone")
    routers = loaded_after_compiling({name: artifacts[name] for name in wanted})
    ordinary = routers["ordinary"][0]
    router, plans = routers["clock and base alone"]
    paired = per_message({"ordinary": routers["never"], "clock and base": (router, None)}, messages, PASSES)
    unfiled = MessageRef("m", 0, None)
    with heap.settled():
        routed = [router.route_outcome(data).witnesses for data in messages]
        loops = {
            "lxml's parse": _loop(lambda: [etree.fromstring(data) for data in messages]),
            "ordinary routing": _loop(lambda: [ordinary.route_outcome(data) for data in messages]),
            "filing": _loop(lambda: [message_witnesses(unfiled, each, plans) for each in routed]),
        }
        writer = writer_seconds(router, plans, hour, LOOPS)
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
    artifact_bytes: bytes, hour: Sequence[bytes], warm_with_other_half: bool
) -> tuple[float, float]:
    """Microseconds a message to file the first half of the hour's messages in a fresh process
    straight after routing the hour (or after filing the other half first), and the second time."""
    half = len(hour) // 2
    routers = loaded_after_compiling({"r": artifact_bytes})
    router, plans = routers["r"]
    unfiled = MessageRef("m", 0, None)
    with heap.settled():
        routed = [router.route_outcome(data).witnesses for data in hour]
        if warm_with_other_half:
            for found in routed[half:]:
                message_witnesses(unfiled, found, plans)
        times = []
        for _ in range(2):
            started = time.perf_counter()
            for found in routed[:half]:
                message_witnesses(unfiled, found, plans)
            times.append((time.perf_counter() - started) / half * 1e6)
    return times[0], times[1]


def measure(population: str, sizes: Sizes) -> list[dict]:
    hour = prepare(population, sizes)
    messages = hour.messages[: sizes.stage1_messages]
    context = in_fresh_process(in_context, hour.artifacts, messages)
    parts = in_fresh_process(alone, hour.artifacts, messages, hour.messages)
    filed = hour.artifacts["clock and base, filed"]
    cold, warm = in_fresh_process(first_filing, filed, hour.messages, False)
    after_other, _ = in_fresh_process(first_filing, filed, hour.messages, True)
    plain = context["ordinary"]
    rows = [
        (f"ordinary routing ({sizes.ordinary:,} subscriptions)", plain, parts["ordinary routing"]),
        ("of which lxml's parse", None, parts["lxml's parse"]),
        ("clock (//pubDate off the tree)", context["clock"], None),
        ("factored base (//item off the tree, rows)", context["base"], None),
        ("clock and base", context["clock and base"], parts["clock and base"]),
        ("filing (warm)", context["clock and base, filed"] - context["clock and base"], parts["filing"]),
        ("writer (the hour's tables, no Parquet)", None, parts["writer"]),
        ("filing, first pass", None, cold),
        ("filing, first pass after the other half", None, after_other),
        ("filing, second pass", None, warm),
    ]
    return [
        {
            "population": population,
            "part": part,
            "in context us/msg": _rounded(in_ctx),
            "in context % of routing": _share(in_ctx, plain),
            "alone us/msg": _rounded(by_itself),
            "alone % of routing": _share(by_itself, plain),
        }
        for part, in_ctx, by_itself in rows
    ]


def _rounded(value: float | None) -> float | str:
    return "" if value is None else round(value, 1)


def _share(value: float | None, plain: float) -> str:
    return "" if value is None else f"{value / plain:.0%}"


TEXT = """\
`bench/join_stage1_bench.py`: the join bench's stage 1 taken apart, on each population's news hour
12 with 10,000 ordinary subscriptions. `in context`: what the part adds to routing, the routers
taking turns on the same 300 messages (shuffled turns of 25, the median of per-turn ratios over the
ordinary router, times its time; each router its own copy, so filing's row, a difference of two
copies, carries their 1 to 3% disagreement). `alone`: the same work with nothing around it (the
clock and base routed by a router whose one ordinary subscription never matches, paired in the
same turns against that router alone; filing in a loop over routed outcomes; the writer's settle
and tables on the whole filed hour, divided by its messages, as `join_bench.py` times them). The
first-pass rows file the first half of the hour's messages in a fresh process right after routing
the hour, after filing its other half first, and again (warm). Percentages are of the ordinary
router's time in context."""


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
