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
  whose one ordinary subscription never matches, paired against that router alone; filing as a
  routing task files (the walked rows packed into the batch's sink as each message is routed,
  then the batch kept): keeping the batches, timed apart from routing them, in loops; the
  writer on a whole filed hour (:func:`join_bench.writer_seconds`).
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

A second table takes filing and the writer apart further as they were in the state's format 1, a
record a message filed by block in the routing task (:func:`details`, each in a fresh process, on
the whole hour; since a488929 format 2's tasks send a record of columns every 32 messages,
:mod:`feedrouter.join.batches`, which the first table times): filing's pieces alone (the event time,
the message's records, the compiled loop that files its rows by block, the Python around it), the
writer's phases (settling, each table's columns, the tables beyond their columns), and what a new
worker builds on first use while it files its first hour (a base's checks, a key's bucket, a hot
key's table decider: counted and timed where they are made). These are the figures the README's
stage-1 paragraphs quote.

A third table takes stage 1 apart inside one router as a worker has it (:func:`one_router`: one
copy routing as a task, its parts turned off turn by turn), where the tables above compare copies.

A fourth, **stage 1 in a worker** (:func:`worker_rows`), is the figure the target is judged on: the
join bench's worker rounds (:func:`join_bench.paired_workers`: a fresh process a round, two copies
of the filing router, one routing the hour as a task does, the other with its blocks set aside,
paired batch by batch, first pass and warm, the writer on the stage-1 copy's batches), on both
feeds, with 10,000 ordinary subscriptions and with as many as there are join subscriptions
(``--ordinary``), without the join bench's stage 2 and its other routers.

Results: ``bench/results/join_stage1_parts.md`` and ``.csv``; the details in
``join_stage1_details.md`` and ``.csv``; the parts in one router in ``join_stage1_one_router.md``
and ``.csv``; stage 1 in a worker in ``join_stage1_worker.md`` and ``.csv`` (a run keeps the rows of
the populations and sizes it did not measure).

Usage: ``.venv/bin/python bench/join_stage1_bench.py [--quick] [--populations A,C] [--details]
[--one-router] [--worker [--ordinary 10000,all]]``
(about 7 min a population on 2 cores; ``--worker``: the fourth table only, about 7 min a population
at 10,000 ordinary subscriptions and 20 more with ``all``; ``--details``: the second table only, about 3 min a
population; ``--quick``: the join bench's small sizes)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from lxml import etree

from common import RESULTS, markdown_table, write_csv
from feedrouter import heap
from feedrouter.join import selections
from feedrouter.join.collect import joinable_time
from feedrouter.join.plan import clock_block
from feedrouter.join.relations import HourWitnesses, MessageRef, MessageWitnesses, message_witnesses
from feedrouter.join.selections import witness_plans
from feedrouter.spark.tasks import FILING_BATCH
from feedrouter.spark.witnesses import tables as witness_tables
from join_bench import (
    CLOCK_FORMAT,
    CLOCK_PATH,
    CLOCKS,
    FEEDS,
    FIRST_PASS_ROUNDS,
    FULL,
    LATENESS,
    PAIRED_PASSES,
    PASSES,
    POPULATIONS,
    QUICK,
    SEED,
    WRITER_PASSES,
    Sizes,
    artifact,
    build_workload,
    filed_as_a_task,
    in_fresh_process,
    kept_as_a_task,
    kept_rows,
    loaded_after_compiling,
    ordinary_population,
    paired_turns,
    paired_workers,
    per_message,
    routed_as_a_task,
    sink_of,
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
        loops = {
            "lxml's parse": _loop(lambda: [etree.fromstring(data) for data in messages]),
            "ordinary routing": _loop(lambda: [ordinary.route_outcome(data) for data in messages]),
        }
        _routed(router, plans, messages, hour)  # untimed, as _loop's first
        loops["filing"] = statistics.median(_routed(router, plans, messages, hour) for _ in range(LOOPS))
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
    straight after routing the hour (or after filing the other half first), and the second time.
    As a routing task packs the walked rows while it routes, filing is keeping the batches, timed
    apart from routing them (:func:`_routed`)."""
    half = len(whole_hour) // 2
    routers = loaded_after_compiling({"r": artifact_bytes})
    router, plans = routers["r"]
    with heap.settled():
        [router.route_outcome(data) for data in whole_hour]
        if warm_with_other_half:
            _routed(router, plans, whole_hour[half:], hour)
        times = [_routed(router, plans, whole_hour[:half], hour) / half * 1e6 for _ in range(2)]
    return times[0], times[1]


def _routed(router: Any, plans: Any, messages: Sequence[bytes], hour: datetime) -> float:
    """``messages`` routed as a routing task routes them, :data:`~feedrouter.spark.tasks.
    FILING_BATCH` at a time, their walked rows packed into the batch's sink as they are routed
    (:func:`join_bench.routed_as_a_task`), each batch then kept as one record
    (:func:`join_bench.kept_as_a_task`); seconds spent keeping them (what filing is now that the
    walked rows are packed as they are routed)."""
    keeping = 0.0
    for start in range(0, len(messages), FILING_BATCH):
        routed = routed_as_a_task(router, plans, messages[start : start + FILING_BATCH])
        started = time.perf_counter()
        kept_as_a_task(routed, plans, hour, start)
        keeping += time.perf_counter() - started
    return keeping


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


#: passes of :func:`one_router` over the hour
ONE_ROUTER_PASSES = 9


def one_router(
    artifact_bytes: bytes, messages: Sequence[bytes], hour: datetime, passes: int
) -> dict[str, float]:
    """Per cent of the ordinary routing each part of stage 1 adds in one router, as a worker has
    it: the filing router's one copy (unpickled as a worker unpickles it) routes turns of
    :data:`~feedrouter.spark.tasks.FILING_BATCH` messages as a task does, with its parts turned
    off in some turns (in an order shuffled every turn, :func:`join_bench.paired_turns`): ``none
    of it`` routes with neither the clock nor the base and keeps nothing, the ordinary routing of
    the same copy. Each figure is the median of per-turn ratios over ``none of it``; the writer's
    tables of the hour (:func:`join_bench.writer_seconds`, the same copy's batches) per message
    over the ordinary routing's per message (the median of the passes' means). One copy, so that
    the parts find the caches as the router's own other work leaves them: two copies of one
    router differ by up to 5% by where the heap puts them, more than some parts cost. The
    router's blocks are turned off by setting its tables of them aside for the turn (a bench's
    reach into the router: nothing in the product turns a block off and on)."""
    router, plans = loaded_after_compiling({"r": artifact_bytes})["r"]
    clocks, walked = router._clocks, router._walked

    def routed(block: Sequence[bytes], clock: bool = True, base: bool = True, kept: bool = True) -> None:
        router._clocks, router._walked = (clocks if clock else {}), (walked if base else {})
        try:
            if not (clock or base or kept):
                [router.route_outcome(data) for data in block]
                return
            found = routed_as_a_task(router, plans, block)
            if kept:
                kept_as_a_task(found, plans, hour)
            else:
                sink_of(plans).take()  # the next turn's batch starts empty
        finally:
            router._clocks, router._walked = clocks, walked

    variants: dict[str, Callable[[Sequence[bytes]], None]] = {
        "stage 1": routed,
        "without the clock": partial(routed, clock=False),
        "without the base": partial(routed, base=False),
        "without keeping": partial(routed, kept=False),
        "none of it": partial(routed, clock=False, base=False, kept=False),
    }
    for variant in variants.values():  # caches filled, first uses made
        variant(messages[:FILING_BATCH])
    turns = {name: partial(_seconds_of, variant) for name, variant in variants.items()}
    timed = paired_turns(turns, messages, FILING_BATCH, passes, "none of it")
    writer = writer_seconds(router, plans, messages, hour, WRITER_PASSES)
    found = {name: (each.ratio - 1) * 100 for name, each in timed.items()}
    plain = timed["none of it"].seconds
    found["ordinary us/msg"] = plain * 1e6
    found["the writer"] = writer / plain * 100
    return found


def _seconds_of(work: Callable[[Sequence[bytes]], None], block: Sequence[bytes]) -> float:
    """Seconds ``work`` takes over ``block``."""
    started = time.perf_counter()
    work(block)
    return time.perf_counter() - started


def one_router_rows(population: str, sizes: Sizes) -> list[dict]:
    """The table of :func:`one_router` on each feed's hour 12 (the whole hour, each in its own
    fresh process): what stage 1 adds to the ordinary routing with the writer and without, and
    each part as what turning it off takes away."""
    rows = []
    for feed, hour in filed_hours(population, sizes).items():
        found = in_fresh_process(
            one_router, hour.artifacts["filed"], hour.messages, hour.hour, ONE_ROUTER_PASSES
        )
        whole = found["stage 1"]
        parts = {
            "stage 1 with the writer %": whole + found["the writer"],
            "stage 1 but the writer %": whole,
            "the clock %": whole - found["without the clock"],
            "the walked base %": whole - found["without the base"],
            "keeping the batches %": whole - found["without keeping"],
            "the writer %": found["the writer"],
        }
        rows.append(
            {
                "population": population,
                "feed": feed,
                "ordinary us/msg": round(found["ordinary us/msg"], 1),
                **{part: round(share, 1) for part, share in parts.items()},
            }
        )
    return rows


def filed_hours(population_name: str, sizes: Sizes) -> dict[str, Hour]:
    """Per feed, its hour 12 and the router of its clock and factored base beside the ordinary
    population, with its plans (``filed``), as the join bench's stage 1 has them."""
    found = filed_hours_of(population_name, sizes, [str(sizes.ordinary)])
    return {feed: hour for (_, feed), hour in found.items()}


def filed_hours_of(population_name: str, sizes: Sizes, counts: Sequence[str]) -> dict[tuple[int, str], Hour]:
    """:func:`filed_hours` per ordinary population size of ``counts`` (a number, or ``all``: as many
    as there are join subscriptions), keyed by the size and the feed."""
    population = next(p for p in POPULATIONS if p.name == population_name)
    workload = build_workload(population, sizes)
    found = {}
    for count in (len(workload.joins.plans) if each == "all" else int(each) for each in counts):
        ordinary = ordinary_population(count, workload.vocabulary, SEED)
        for feed in FEEDS:
            plans = witness_plans(workload.joins.specs_for(feed))
            router = witness_router([*plans.bases.values(), clock_block(feed, CLOCK_PATH)], ordinary)
            hour = workload.feeds[feed][len(workload.feeds[feed]) // 2]
            found[count, feed] = Hour(
                {"filed": artifact((router, plans))}, [m.data for m in hour.messages], hour.hour
            )
            del plans, router
    return found


def worker_rows(population: str, sizes: Sizes, counts: Sequence[str]) -> list[dict]:
    """Stage 1 in a worker (:func:`join_bench.paired_workers`, :data:`join_bench.FIRST_PASS_ROUNDS`
    rounds) on each feed's hour 12 at each ordinary population size of ``counts``: per cent of the
    ordinary routing of the same router on the first pass and warm, each with the hour's writer
    added, and the target's verdict on the larger."""
    rows = []
    for (count, feed), hour in filed_hours_of(population, sizes, counts).items():
        rounds = paired_workers(hour.artifacts["filed"], hour.messages, hour.hour, FIRST_PASS_ROUNDS)
        row: dict[str, object] = {"population": population, "feed": feed, "ordinary subscriptions": count}
        writer = statistics.median(r.writer for r in rounds)
        judged = []
        for label, (plain_of, ratio_of) in PAIRED_PASSES.items():
            plain = statistics.median(plain_of(r) for r in rounds)
            shares = sorted(ratio_of(r) - 1 for r in rounds)
            share = statistics.median(shares)
            row[f"{label}: ordinary us/msg"] = round(plain * 1e6, 1)
            row[f"{label}: stage 1 %"] = round(share * 100, 1)
            row[f"{label}: rounds' least / most %"] = f"{shares[0] * 100:.1f} / {shares[-1] * 100:.1f}"
            row[f"{label}: with the writer %"] = round((share + writer / plain) * 100, 1)
            judged.append(share + writer / plain)
        row["writer us/msg"] = round(writer * 1e6, 1)
        row["decode s"] = round(statistics.median(r.decode for r in rounds), 2)
        row["target <= 20%"] = "yes" if max(judged) <= 0.2 else "NO"
        rows.append(row)
    return rows


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


def _filed_router(artifact_bytes: bytes, whole_hour: Sequence[bytes]) -> tuple[Any, Any, list]:
    """The filing router of an artifact, loaded as a worker loads it, with the hour routed."""
    router, plans = loaded_after_compiling({"r": artifact_bytes})["r"]
    return router, plans, [router.route_outcome(data).witnesses for data in whole_hour]


def filing_parts(artifact_bytes: bytes, whole_hour: Sequence[bytes], hour: datetime) -> dict[str, float]:
    """Microseconds a message of filing's pieces alone, warm (tight loops over the routed hour,
    after :data:`WARM_FILINGS` untimed filings): the whole of it as a routing task files a
    message, its event time, the message's two records, the filing loop (:func:`~feedrouter.join.
    relations.message_witnesses`) and, in it, each plan's rows filed by block (``Served.bind``,
    the compiled loop where it is built)."""
    _, plans, routed = _filed_router(artifact_bytes, whole_hour)
    clock = next(CLOCKS[block] for found in routed for block in found if block in CLOCKS)
    ref = MessageRef("k", 0, None)
    served = plans.served
    with heap.settled():
        for _ in range(WARM_FILINGS):
            for found in routed:
                filed_as_a_task(found, plans, hour)
        loops = {
            "filing as a task": lambda: [filed_as_a_task(found, plans, hour) for found in routed],
            "event time": lambda: [joinable_time(f, clock, CLOCK_FORMAT, hour, LATENESS) for f in routed],
            "records (MessageRef, MessageWitnesses)": lambda: [
                MessageWitnesses(MessageRef("k", 0, None)) for _ in routed
            ],
            "filing loop": lambda: [message_witnesses(ref, found, plans) for found in routed],
            "rows filed by block": lambda: [
                served[plan].bind(rows, {})
                for found in routed
                for plan, rows in found.items()
                if plan in served
            ],
        }
        found = {name: _loop(work) / len(routed) * 1e6 for name, work in loops.items()}
    found["glue (the loop's Python around it)"] = found["filing loop"] - found["rows filed by block"]
    return found


def writer_phases(artifact_bytes: bytes, whole_hour: Sequence[bytes], hour: datetime) -> dict[str, float]:
    """Microseconds a message of the hour's writer, phase by phase (medians of :data:`LOOPS`
    fresh hours): settling the filed messages, each table's columns, and the four tables with
    their columns (:func:`feedrouter.spark.witnesses.tables`, what ``join_bench`` times)."""
    _, plans, routed = _filed_router(artifact_bytes, whole_hour)
    filed = [filed_as_a_task(found, plans, hour, f"m{i}") for i, found in enumerate(routed)]

    def fresh() -> HourWitnesses:
        witnesses = HourWitnesses("f", hour)
        for found in filed:
            witnesses.append(found)
        return witnesses

    phases: dict[str, list[float]] = {}
    clock = time.perf_counter
    with heap.settled():
        for _ in range(LOOPS + 1):  # the first untimed
            witnesses = fresh()
            started = clock()
            witnesses.settle()
            times = {"settling": clock() - started}
            for name, columns in (
                ("roots' columns", witnesses.root_columns),
                ("values' columns", witnesses.value_columns),
                ("fragments' columns", witnesses.fragment_columns),
            ):
                started = clock()
                columns()
                times[name] = clock() - started
            witnesses = fresh()
            witnesses.settle()
            started = clock()
            witness_tables(witnesses)
            times["the four tables"] = clock() - started
            for name, spent in times.items():
                phases.setdefault(name, []).append(spent)
    found = {name: statistics.median(spent[1:]) / len(filed) * 1e6 for name, spent in phases.items()}
    columns = sum(found[name] for name in ("roots' columns", "values' columns", "fragments' columns"))
    found["tables beyond their columns"] = found["the four tables"] - columns
    found["writer (settling and tables)"] = found["settling"] + found["the four tables"]
    return found


@contextmanager
def _counted(made: dict[str, list[float]]) -> Iterator[None]:
    """Count and time, where they are made, what filing builds on first use: a base's checks
    (:meth:`~feedrouter.join.selections.Served._checks`, once per base and process), a key's bucket
    (``selections._bucket``, on the key's first row) and a hot key's table decider
    (``selections._hot_decider``). Each is looked up at its call (the filing loop passes
    ``_bucket``, a bucket asks for ``_hot_decider``), so wrapping the module's names reaches them."""

    def wrapped(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args)
            finally:
                made.setdefault(name, []).append(time.perf_counter() - started)

        return timed

    kept = selections._bucket, selections._hot_decider, selections.Served._checks
    checks = wrapped("a base's checks", kept[2])
    selections._bucket = wrapped("a key's bucket", kept[0])
    selections._hot_decider = wrapped("a hot key's table decider", kept[1])
    selections.Served._checks = lambda self: self.__dict__.get("_compiled") or checks(self)  # type: ignore[method-assign]
    try:
        yield
    finally:
        selections._bucket, selections._hot_decider, selections.Served._checks = kept  # type: ignore[method-assign]


def first_use(
    artifact_bytes: bytes, whole_hour: Sequence[bytes], hour: datetime
) -> dict[str, tuple[float, int]]:
    """A new worker's first filing of its hour (routed first), and what it built on first use as
    it went: per kind, microseconds a message of the hour and how many (:func:`_counted`; the
    wrapper's own call, a fraction of a microsecond, is in its figure)."""
    _, plans, routed = _filed_router(artifact_bytes, whole_hour)
    made: dict[str, list[float]] = {}
    count = len(routed)
    with heap.settled(), _counted(made):
        started = time.perf_counter()
        for found in routed:
            filed_as_a_task(found, plans, hour)
        first = time.perf_counter() - started
    found = {"filing's first pass": (first / count * 1e6, count)}
    for name in ("a base's checks", "a key's bucket", "a hot key's table decider"):
        spent = made.get(name, [])
        found[name] = (sum(spent) / count * 1e6, len(spent))
    return found


#: untimed filings of the hour before :func:`filing_parts` times the warm pieces
WARM_FILINGS = 3
#: fresh processes per figure of :func:`details` (their median)
DETAIL_ROUNDS = 3


def details(population: str, sizes: Sizes) -> list[dict]:
    """The second table: filing's pieces, the writer's phases and a new worker's first-use costs on
    the population's news hour, each in :data:`DETAIL_ROUNDS` fresh processes (medians)."""
    hour = prepare(population, sizes)
    filed = hour.artifacts["clock and base alone"]
    runs: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    for _ in range(DETAIL_ROUNDS):
        for name, value in in_fresh_process(filing_parts, filed, hour.messages, hour.hour).items():
            runs.setdefault(f"filing: {name}", []).append(value)
        for name, value in in_fresh_process(writer_phases, filed, hour.messages, hour.hour).items():
            runs.setdefault(f"writer: {name}", []).append(value)
        for name, (value, made) in in_fresh_process(first_use, filed, hour.messages, hour.hour).items():
            runs.setdefault(f"first use: {name}", []).append(value)
            counts.setdefault(f"first use: {name}", []).append(made)
    return [
        {
            "population": population,
            "part": name,
            "us/msg (median)": round(statistics.median(values), 2),
            "least / most": f"{min(values):.2f} / {max(values):.2f}",
            "made in the hour": (
                "" if name not in counts or "first pass" in name else int(statistics.median(counts[name]))
            ),
        }
        for name, values in runs.items()
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
paired in the same turns against that router alone; filing as a routing task files, the walked rows
packed into the batch's sink as each message is routed and each batch of 32 then kept: the keeping,
timed apart from the routing (rows of code f0719d9 and older: rows routed without the sink, then
kept, the packing in filing's figure); the writer's settle and tables on the whole filed hour,
divided by its messages, as `join_bench.py` times them). The first-pass rows file the first half of
the hour's messages in a fresh process right after routing the hour, after filing its other half
first, and again (warm), each routed as a task with its batches kept, the keeping timed. `in a
worker`: each router alone in a fresh process, as a routing task has its plan, routing the whole
hour in batches of 32 messages and filing each batch's witnesses after routing it, first pass and 3
warm passes, 4 rounds of fresh processes (the routers in turn, the order reversed every other
round); the clock and base and stage 1 are paired per round and pass over the ordinary router's
routing (medians), filing is read off the filing router's own clock. The stage-1 rows add the writer
(`alone`) to what routing and filing add. Percentages are of the ordinary router's time in context,
`in a worker`'s of its time in a worker (warm, or its first pass on a first pass's rows)."""


DETAILS = """\
`bench/join_stage1_bench.py` (also alone: `--details`): filing and the hour's writer taken apart on
each population's news hour 12 with the router of the clock and the factored base (beside one
ordinary subscription that never matches), each figure the median of 3 fresh processes (the least
and the most beside it), us a message of the hour's 2,000. `filing`: tight loops over the routed
hour after 3 untimed filings (warm): the whole of it as a routing task files a message (its event
time, its records, the filing loop), the event time alone (`pubDate` parsed and admitted), the two
records alone, the filing loop (`message_witnesses`) and the rows filed by block in it
(`Served.bind`, the compiled loop); glue is the loop less the rows' filing. `writer`: on a fresh
filed hour each time (9 timed), settling, each table's columns, the four tables with their
columns (what `join_bench.py` times as the writer) and the tables beyond their columns. `first
use`: a new worker's first filing of the hour, and what it made on first use as it went, counted
and timed where each is made (a base's checks, a key's bucket on the key's first row, a hot key's
table decider after 64 rows)."""


ONE_ROUTER_TEXT = """\
`bench/join_stage1_bench.py` (also alone: `--one-router`): stage 1 taken apart inside one router,
as a worker has it, on each population's hour 12 of both feeds (2,000 messages each) with 10,000
ordinary subscriptions. The router of the feed's clock and factored base, unpickled once in a fresh
process, routes turns of 32 messages as a routing task does (the walked rows packed into the
batch's sink, then the batch kept), 9 passes; in each turn it also routes the same messages with a
part turned off (the clock, the base, the keeping) and with all of them off (`none of it`: the
ordinary routing of the same copy, `ordinary us/msg`), in an order shuffled every turn. Figures
are per cent of that ordinary routing: stage 1 the median of per-turn ratios, a part what turning
it off takes away (parts taken away one at a time need not add up to the whole), the writer its
tables of the hour (the same copy's batches, the median of 5 builds, Parquet left out) per
message. One copy, because two copies of one router differ by up to 5% by where the heap puts
them, more than a part costs: the join bench's paired figures compare copies, each in its own
process. Warm only: a part turned on again finds what it made on first use."""


WORKER_TEXT = """\
`bench/join_stage1_bench.py --worker`: stage 1 as a routing worker pays it, the figure issue 16's
target (at most 20% of routing) is judged on, on each population's hour 12 of both feeds (2,000
messages each), with 10,000 ordinary subscriptions and with as many as there are join
subscriptions. Each of 7 rounds is a fresh process that decodes the feed's filing router (its
clock and factored base beside the ordinary population) twice: one copy routes the hour as a
routing task does (each batch of 32 routed with its sink, then kept), the other routes it with its
blocks set aside (the ordinary routing of the same router: `ordinary us/msg`), batch by batch in a
shuffled order, the copies' roles swapped every round, the first pass and 2 warm passes
(`join_bench.paired_workers`, which the join bench's stage 1 uses too). `stage 1 %`: the median
over rounds of the stage-1 copy's time over the other's, minus one (the least and the most round
beside it); `with the writer`: plus the hour's writer's tables (the stage-1 copy's batches, Parquet
left out) per message. Paired inside one process because a process's speed moves by more than
stage 1 costs: on C's news hour, the ordinary routing of a round ran from 165 to 295 us a message
on this machine, where the paired share stayed within 9% to 16%."""


def worker_table(populations: Sequence[str], sizes: Sizes, counts: Sequence[str], out: Path) -> None:
    """:func:`worker_rows` of ``populations`` into ``join_stage1_worker.md`` and ``.csv``, beside
    the rows an earlier run measured of other populations or sizes."""
    info = machine()
    rows = [row for name in populations for row in worker_rows(name, sizes, counts)]
    for row in rows:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    path = out / "join_stage1_worker.csv"
    measured = {(row["population"], _size_kind(row, sizes)) for row in rows}
    kept = [
        row for row in kept_rows(path, set()) if (row["population"], _size_kind(row, sizes)) not in measured
    ]
    rows = sorted(kept + rows, key=lambda row: (row["population"], _size_kind(row, sizes), row["feed"]))
    write_csv(rows, path)
    text = "\n".join(["# Stage 1 in a worker", "", WORKER_TEXT, "", markdown_table(rows, list(rows[0])), ""])
    (out / "join_stage1_worker.md").write_text(text)
    print(text)


def _size_kind(row: dict, sizes: Sizes) -> str:
    """Which of ``--ordinary``'s sizes a row measured: the bench's own, or ``all``."""
    return str(sizes.ordinary) if int(row["ordinary subscriptions"]) == sizes.ordinary else "all"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--populations", default="A,C", help="which populations (A,B,C,D)")
    parser.add_argument("--quick", action="store_true", help="the join bench's small sizes (results/quick/)")
    parser.add_argument(
        "--details", action="store_true", help="the second table only (filing and the writer)"
    )
    parser.add_argument("--one-router", action="store_true", help="the parts in one router only")
    parser.add_argument("--worker", action="store_true", help="stage 1 in a worker only (the target's table)")
    parser.add_argument(
        "--ordinary",
        default=None,
        help="--worker's ordinary population sizes (default: the bench's, and all)",
    )
    args = parser.parse_args()
    sizes, out = (QUICK, RESULTS / "quick") if args.quick else (FULL, RESULTS)
    info = machine()
    populations = args.populations.split(",")
    if args.worker:
        counts = (args.ordinary or f"{sizes.ordinary},all").split(",")
        worker_table(populations, sizes, counts, out)
        return
    parted = [row for name in populations for row in one_router_rows(name, sizes)]
    for row in parted:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    write_csv(parted, out / "join_stage1_one_router.csv")
    text = "\n".join(
        ["# Stage 1 in one router", "", ONE_ROUTER_TEXT, "", markdown_table(parted, list(parted[0])), ""]
    )
    (out / "join_stage1_one_router.md").write_text(text)
    print(text)
    if args.one_router:
        return
    found = [row for name in populations for row in details(name, sizes)]
    for row in found:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    write_csv(found, out / "join_stage1_details.csv")
    table = markdown_table(found, list(found[0]))
    text = "\n".join(["# Stage 1's filing and writer taken apart", "", DETAILS, "", table, ""])
    (out / "join_stage1_details.md").write_text(text)
    print(text)
    if args.details:
        return
    rows = [row for name in populations for row in measure(name, sizes)]
    for row in rows:
        row["code"], row["cpu"] = info["code"], info["cpu"]
    write_csv(rows, out / "join_stage1_parts.csv")
    text = "\n".join(["# Stage 1 taken apart", "", TEXT, "", markdown_table(rows, list(rows[0])), ""])
    (out / "join_stage1_parts.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
