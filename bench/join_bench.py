"""Inter-document join subscriptions (issue 16, paper 001 §6): the shared join stage against each
subscription's join evaluated separately, the view cache, query templates, and stage 1's added cost.

Four populations of different shape, each ``--subscriptions`` join subscriptions over two feeds
(``news``, the subscriptions' own feed, and ``blogs``) of ``--hours`` hourly batches of
``--items`` messages (``feedrouter.workload.joins``):

* ``A`` (dense): the generator's defaults (Zipf 1.0 number of value joins 1-4, 10% cross-feed, 30%
  ``within``, local conditions 0.5, binding predicates 0.2) with windows of 1-24 h; values Zipf 0.3.
* ``B`` (medium): at most 2 value joins, 50% cross-feed, 60% ``within``, few local conditions (0.1)
  and binding predicates (0.05), only long windows (12-24 h), a four times larger vocabulary with
  uniform values.
* ``C`` (selective, A's shape) and ``D`` (selective, B's shape): the same subscriptions over a
  vocabulary 100 (C) and 400 (D) times larger than the rate-scaled default, i.e. values that
  behave like identifiers (a trade id, a PO number, a permalink), which is what correlation rules
  join on, and what paper 001's queries do: a few matches per query.

The default vocabulary is tuned for 60 items an hour; every population scales it with the item
rate (``--items`` / 60), or every value join would pair each message with a large share of the
window; for the same reason the values are far less skewed than the generator's default (Zipf 0.8:
the most frequent author would write 5% of the items, a million pairs an hour for one join).
Subscriptions whose only value joins compare ``@lang`` (four values whatever the rate: a quarter of
the window is each message's partner, millions of pairs an hour that the stage's cap withholds
anyway) are left out and counted.

What is measured, per population:

1. **Stage 1**: one hour's messages of each feed routed by a router holding an ordinary population
   (``//item`` filters on an author, a category, a ticker or a title word, what a subscriber of an
   item feed asks for; ``--ordinary`` of them, and as many as there are join subscriptions) and by
   the same router plus every witness block of the feed and its clock, filing each message's
   witnesses as a routing task does; plus the hour's writer building its tables from the whole
   hour (measured apart: its sorts are per hour). The added cost per message (issue 16: at most
   20%), and block sharing. Each set of routers is timed in a fresh process, as a worker loads a
   plan (:func:`in_fresh_process`); then the same inside the routing task, deliveries included.
2. **Stage 2** on the last hour, with the full lookback (window + lateness): every block's
   witnesses collected over every hour (stage 1 for the whole population), then ``JoinStage.pairs``
   for every subscription at once, timed warm (the hour before was joined first, so every earlier
   hour's value indexes and memberships are built: the view cache, immutable once an hour is
   written) and cold (all rebuilt). Against it, a uniform sample of ``--sample`` subscriptions each
   evaluated alone by :func:`separate_pairs` (its own hash join over the window's witnesses, which
   shares nothing but stage 1), whose pairs must equal the stage's; the separate cost of the whole
   population is ``N`` times the sample's mean.
3. **Templates**: distinct ``plan.template.key`` per number of value joins, beside paper 001's.

Results: ``bench/results/join.md``, ``join_stage2.png`` and ``join_*.csv``; ``--quick`` writes small
sizes to ``bench/results/quick/``.

Usage: ``.venv/bin/python bench/join_bench.py [--quick] [--populations A,B,C,D]``
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import multiprocessing
import os
import pickle
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from common import RESULTS, markdown_table, write_csv
from feedrouter import Router, heap, kernel
from feedrouter.join.batches import BatchBuilder, BatchedHour, RowSink, WitnessBatch
from feedrouter.join.collect import admitted_bounds, collect_hour, joinable_micros, joinable_time
from feedrouter.join.plan import BlockSpec, JoinPlan, JoinSet, clock_block, lookback
from feedrouter.join.relations import (
    ONE_HOUR,
    HourWitnesses,
    MessageRef,
    MessageWitnesses,
    message_rows,
    message_witnesses,
)
from feedrouter.join.selections import MIN_SHARED, WitnessPlans, witness_plans
from feedrouter.join.stage import JoinStage, Pair
from feedrouter.lang import parse
from feedrouter.lang.ast import TemporalKind
from feedrouter.limits import DEFAULT_MAX_JOIN_PAIRS
from feedrouter.spark.tasks import FILING_BATCH
from feedrouter.spark.witnesses import tables as witness_tables
from feedrouter.workload.joins import (
    DEFAULT_VOCABULARY,
    HourBatch,
    Vocabulary,
    generate_feed_hours,
    generate_join_subscriptions,
)
from feedrouter.workload.subscriptions import xquery_string
from paper_bench import machine

FEEDS = ("news", "blogs")
OWN = "news"
CLOCK_PATH, CLOCK_FORMAT = "//pubDate", "rfc822"
LATENESS = timedelta(hours=1)
SEED = 16
#: paper 001, Table 3 (flat schema) and §6.1 (three-level schema, K = 4 at 100,000 queries)
PAPER_FLAT = {1: 1, 2: 3, 3: 6, 4: 16}
PAPER_COMPLEX = {1: 1, 2: 3, 3: 16, 4: "<230"}

Store = dict[tuple[str, datetime], HourWitnesses]


@dataclass(frozen=True)
class Population:
    name: str
    shape: str
    knobs: dict
    vocabulary_scale: float  # on top of the item rate's
    value_zipf: float


_A_KNOBS: dict = {"windows_hours": (1, 24)}
_B_KNOBS: dict = {
    "max_joins": 2,
    "cross_feed": 0.5,
    "within": 0.6,
    "local_conditions": 0.1,
    "binding_predicates": 0.05,
    "windows_hours": (12, 24),
}
POPULATIONS = (
    Population("A", "dense: generator defaults, windows 1-24 h, values Zipf 0.3", _A_KNOBS, 1, 0.3),
    Population(
        "B",
        "medium: max 2 joins, 50% cross-feed, 60% within, local conditions 0.1, windows 12-24 h, "
        "4x vocabulary, uniform values",
        _B_KNOBS,
        4,
        0.0,
    ),
    Population(
        "C", "selective, A's shape: 100x vocabulary (identifier-like values), Zipf 0.3", _A_KNOBS, 100, 0.3
    ),
    Population(
        "D", "selective, B's shape: 400x vocabulary (identifier-like values), uniform", _B_KNOBS, 400, 0.0
    ),
)


@dataclass(frozen=True)
class Sizes:
    hours: int
    items: int
    subscriptions: int
    ordinary: int
    sample: int
    stage1_messages: int
    rounds: int
    budget: int  # seconds of stage-2 measurement per hour and population (the sample stops there)


FULL = Sizes(24, 2000, 100_000, 10_000, 200, 300, 3, 300)
QUICK = Sizes(4, 300, 5_000, 1_000, 60, 100, 2, 30)


# -- workload ---------------------------------------------------------------------------------------


def vocabulary(population: Population, items: int) -> Vocabulary:
    """The default vocabulary scaled with the item rate (it is tuned for 60 items an hour)."""
    factor = items / 60 * population.vocabulary_scale
    v = DEFAULT_VOCABULARY

    def grown(size: int) -> int:
        return max(size, round(size * factor))

    return replace(
        v,
        authors=grown(v.authors),
        titles=grown(v.titles),
        tickers=grown(v.tickers),
        categories=grown(v.categories),
        links=grown(v.links),
        zipf=population.value_zipf,
    )


def lang_only(plan: JoinPlan) -> bool:
    return all(join == ("@lang", "@lang") for join in plan.joins)


@dataclass
class Workload:
    population: Population
    vocabulary: Vocabulary
    feeds: dict[str, list[HourBatch]]
    joins: JoinSet
    dropped: int
    timings: dict[str, float] = field(default_factory=dict)


def build_workload(population: Population, sizes: Sizes) -> Workload:
    vocab = vocabulary(population, sizes.items)
    started = time.perf_counter()
    feeds = generate_feed_hours(
        seed=SEED,
        feeds=FEEDS,
        hours=sizes.hours,
        items_per_hour=sizes.items,
        vocabulary=vocab,
        lateness=LATENESS,
    )
    generated = time.perf_counter() - started
    texts = generate_join_subscriptions(
        sizes.subscriptions, seed=SEED, feeds=FEEDS, own=OWN, vocabulary=vocab, **population.knobs
    )
    started = time.perf_counter()
    joins, dropped = JoinSet(), 0
    for i, text in enumerate(texts):
        plan = joins.add(f"j{i}", parse(text), OWN)
        if lang_only(plan):
            del joins.plans[plan.sid]  # its blocks stay: they are shared with others anyway
            dropped += 1
    compiled = time.perf_counter() - started
    workload = Workload(population, vocab, feeds, joins, dropped)
    workload.timings = {"generate documents s": generated, "compile joins s": compiled}
    return workload


def ordinary_population(n: int, vocab: Vocabulary, seed: int) -> list[tuple[str, str]]:
    """``//item`` filters a subscriber of an item feed would write: an author, a category, a ticker
    or a title word, some with a language; values drawn uniformly, so each message matches a few."""
    rng = random.Random(seed)

    def pick(size: int, name: Callable[[int], str]) -> str:
        return xquery_string(name(rng.randrange(size)))

    forms = (
        lambda: f"//item[author = {pick(vocab.authors, vocab.author)}]",
        lambda: f"//item[category = {pick(vocab.categories, vocab.category)}]/title",
        lambda: f"//item[ticker = {pick(vocab.tickers, vocab.ticker)}]",
        lambda: f"//item[contains(title, {pick(vocab.titles, lambda r: vocab.title(r).split()[0])})]/link",
        lambda: f'//item[@lang = "de"][author = {pick(vocab.authors, vocab.author)}]/title',
    )
    return [(f"o{i}", rng.choice(forms)()) for i in range(n)]


# -- stage 1 ----------------------------------------------------------------------------------------


def witness_router(specs: Iterable[BlockSpec], ordinary: Sequence[tuple[str, str]] = ()) -> Router:
    router = Router.compile(ordinary, on_error="collect")
    for spec in specs:
        router.add_witness(spec)
    router.reindex()
    return router


@dataclass(frozen=True)
class Timed:
    """One router's time per message (``seconds``: the median of the passes' means) and its cost
    against the ordinary router's (``ratio``: the median, over turns, of its time over the ordinary
    router's on the same turn's messages)."""

    seconds: float
    ratio: float


def per_message(
    routers: Mapping[str, tuple[Router, WitnessPlans | FiledByBlock | None]],
    messages: Sequence[bytes],
    hour: datetime,
    passes: int,
    python_rows: Collection[str] = (),
) -> dict[str, Timed]:
    """Each router's time per message, and with its plans to file its witnesses by block too
    (what a routing task does before it sends them to the hour's writer, a batch of messages at a
    time: :data:`~feedrouter.spark.tasks.FILING_BATCH`, here a turn's, each with its event time:
    :func:`filed_as_a_task`; ``hour`` is the messages' hour). The writer's share is measured
    apart, on a whole hour (:func:`writer_seconds`).

    The routers take turns in blocks of :data:`TURN` messages over ``passes`` passes of
    ``messages``, in an order shuffled every turn (seeded). The shuffle matters: a router finds
    the caches as the router before it left them, and in a fixed rotation each router always
    follows the same one (the factored router followed the one-by-one router, whose 15,000 plans
    evict everything, on every turn: measured +14 points against the ordinary router from the
    order alone). A turn is short enough for the machine's drift (it is shared) to fall on every
    router alike, and long enough for a router's own structures to be warm, as they are in a worker
    that routes with one plan. A router's cost against the ordinary router's is the median of the per-turn
    ratios (paired on the same messages, close in time: on a noisy machine it held within 1 to 2
    points from run to run where the difference of pass means moved by 10). The routers named in
    ``python_rows`` read witness rows without the compiled kernel
    (:func:`feedrouter.kernel.turned_off`)."""
    turns = {
        name: partial(_route_turn, router, plans, hour=hour, python_rows=name in python_rows)
        for name, (router, plans) in routers.items()
    }
    for turn in turns.values():  # plans built, caches filled, checks compiled
        turn(messages[:3])
    return paired_turns(turns, messages, TURN, passes, "ordinary")


def paired_turns(
    turns: Mapping[str, Callable[[Sequence[bytes]], float]],
    messages: Sequence[bytes],
    size: int,
    passes: int,
    baseline: str,
) -> dict[str, Timed]:
    """Each of ``turns`` (seconds it takes over a block of messages) on blocks of ``size`` of
    ``messages`` over ``passes`` passes, all of them on each block in an order shuffled every
    block (seeded): its seconds a message (the median of the passes' means) and the median over
    blocks of its time over ``baseline``'s on the same block (:class:`Timed`). Paired and close in
    time, so the machine's drift falls on all of them alike (:func:`per_message`)."""
    names = list(turns)
    order = random.Random(SEED)
    means: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    with heap.settled():
        for _ in range(passes):
            spent = dict.fromkeys(names, 0.0)
            for start in range(0, len(messages), size):
                block = messages[start : start + size]
                turn = {name: turns[name](block) for name in order.sample(names, len(names))}
                for name in names:
                    spent[name] += turn[name]
                    ratios[name].append(turn[name] / turn[baseline])
            for name in names:
                means[name].append(spent[name] / len(messages))
    return {name: Timed(statistics.median(means[name]), statistics.median(ratios[name])) for name in names}


def _route_turn(
    router: Router,
    plans: WitnessPlans | FiledByBlock | None,
    block: Sequence[bytes],
    *,
    hour: datetime,
    python_rows: bool,
) -> float:
    """Seconds to route ``block`` and, with ``plans``, file its witnesses as a routing task does
    (:func:`per_message`)."""
    with kernel.turned_off() if python_rows else contextlib.nullcontext():
        started = time.perf_counter()
        if plans is None:
            [router.route_outcome(data) for data in block]
        else:
            # a routing task keeps a batch of messages' witnesses at a time (FILING_BATCH; a turn
            # is fewer) and sends them to the hour's writer
            kept_as_a_task(routed_as_a_task(router, plans, block), plans, hour)
        return time.perf_counter() - started


#: the feeds' clocks (their event time's blocks), by block id: :func:`filed_as_a_task` finds a
#: message's among its witnesses
CLOCKS = {clock.id: clock for clock in (clock_block(feed, CLOCK_PATH) for feed in FEEDS)}


@dataclass(frozen=True)
class FiledByBlock:
    """Witness plans whose rows a routing task files by block itself, as stage 1 did before the
    state's format 2 (:data:`FORMAT_1`: measured beside it, paired)."""

    plans: WitnessPlans


def filed_as_a_task(
    witnesses: Mapping[str, Sequence[Any]],
    plans: WitnessPlans | FiledByBlock,
    hour: datetime,
    key: str = "m",
) -> MessageWitnesses:
    """A routed message's witnesses kept as a routing task keeps them (:class:`feedrouter.spark.
    tasks._Filing`): its event time read off its clock's row, parsed and admitted in ``hour``
    (:func:`~feedrouter.join.collect.joinable_time`), then each witness plan's rows whole (the
    state's format 2: the join stage files them by block as it reads the hour), or, for
    :class:`FiledByBlock`, filed by block (format 1). (Filed without its event time, as this bench
    used to file them, stage 1 looked 2.7 to 3.5 us a message cheaper than it is: parsing an RFC
    822 date costs that much.)"""
    ref = MessageRef(key, 0, _event_time(witnesses, hour))
    if isinstance(plans, FiledByBlock):
        return message_witnesses(ref, witnesses, plans.plans)
    return message_rows(ref, witnesses, plans)


def routed_as_a_task(
    router: Router, plans: WitnessPlans | FiledByBlock, block: Sequence[bytes]
) -> list[Mapping[str, Sequence[Any]]]:
    """The witnesses of ``block``'s messages (a batch's at most) routed as a routing task routes
    them: format 2's walked blocks pack their rows into the batch's sink as each message is routed
    (:class:`~feedrouter.join.batches.RowSink`, :func:`kept_as_a_task` takes them with the rest)."""
    if isinstance(plans, FiledByBlock):
        return [router.route_outcome(data).witnesses for data in block]
    sink = sink_of(plans)
    routed: list[Mapping[str, Sequence[Any]]] = []
    for data in block:
        sink.message = len(routed)
        routed.append(router.route_outcome(data, sink=sink).witnesses)
    return routed


def sink_of(plans: WitnessPlans) -> RowSink:
    """The sink of a routing task with these plans (one a task: a batch empties it)."""
    found = plans.__dict__.get("_bench_sink")
    if found is None:
        found = plans.__dict__["_bench_sink"] = RowSink(_served_names(plans))
    return found


def kept_as_a_task(
    routed: Sequence[Mapping[str, Sequence[Any]]],
    plans: WitnessPlans | FiledByBlock,
    hour: datetime,
    first: int = 0,
) -> list[MessageWitnesses] | WitnessBatch:
    """A batch of routed messages' witnesses (``routed``, numbered from ``first``) kept as a
    routing task keeps them (:class:`feedrouter.spark.tasks._Filing`): each message's event time
    read off its clock's row, parsed and admitted in ``hour``, then the batch's rows whole as one
    record of columns (the state's format 2, :class:`~feedrouter.join.batches.WitnessBatch`), or,
    for :class:`FiledByBlock`, each message's filed by block (format 1, :func:`filed_as_a_task`)."""
    if isinstance(plans, FiledByBlock):
        return [
            filed_as_a_task(witnesses, plans, hour, f"m{first + at}") for at, witnesses in enumerate(routed)
        ]
    builder = BatchBuilder(_served_names(plans), sink_of(plans))  # with what routed_as_a_task packed
    earliest, end = admitted_bounds(hour, LATENESS)
    clock = _clock_of(*routed)  # the feed's, which a task knows: looked up once a batch
    for at, witnesses in enumerate(routed):
        time_ = None if clock is None else joinable_micros(witnesses, clock, CLOCK_FORMAT, earliest, end)
        builder.add(first + at, f"m{first + at}", 0, time_, "", witnesses)
    return builder.batch()


def _batch_as_a_task(
    router: Router, plans: WitnessPlans | FiledByBlock, messages: Sequence[bytes], hour: datetime, start: int
) -> list[MessageWitnesses] | WitnessBatch:
    """The records a routing task sends for the batch of ``messages`` from ``start`` on."""
    block = messages[start : start + FILING_BATCH]
    return kept_as_a_task(routed_as_a_task(router, plans, block), plans, hour, start)


def _served_names(plans: WitnessPlans) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Per witness plan, its names, as a routing task's filing keeps them (once per task)."""
    found = plans.__dict__.get("_bench_names")
    if found is None:
        found = plans.__dict__["_bench_names"] = {plan: plans.names(plan) for plan in plans.served}
    return found


def _event_time(witnesses: Mapping[str, Sequence[Any]], hour: datetime) -> datetime | None:
    """A message's event time joins may use: its clock's row parsed and admitted in ``hour``."""
    clock = _clock_of(witnesses)
    return None if clock is None else joinable_time(witnesses, clock, CLOCK_FORMAT, hour, LATENESS)


def _clock_of(*found: Mapping[str, Sequence[Any]]) -> BlockSpec | None:
    """The feed's clock among messages' witnesses (:data:`CLOCKS`), or None."""
    return next((CLOCKS[block] for witnesses in found for block in witnesses if block in CLOCKS), None)


def writer_seconds(
    router: Router, plans: WitnessPlans | FiledByBlock, messages: Sequence[bytes], hour: datetime, passes: int
) -> float:
    """Seconds a message the hour's writer takes to build its tables from an hour of ``messages``
    (of ``hour``) as routing tasks filed them (:func:`feedrouter.spark.witnesses.tables`: each block's roots,
    each leaf's values and each fragment, sorted), the median of ``passes``. Writing them as
    Parquet is left out, as writing delivery parts is left out of the ordinary router's time.
    Format 2's hour comes as the routing tasks send it, a record a batch of
    :data:`~feedrouter.spark.tasks.FILING_BATCH` messages (:func:`kept_as_a_task`)."""
    if not isinstance(plans, FiledByBlock):
        batches = [
            cast(WitnessBatch, _batch_as_a_task(router, plans, messages, hour, start))
            for start in range(0, len(messages), FILING_BATCH)
        ]
        spent = []
        with heap.settled():
            # one untimed: a worker's first tables import pyarrow's compute functions (a quarter
            # of a second, once a process), which the median of a few passes does not always hide
            witness_tables(BatchedHour("f", hour, (), batches))
            for _ in range(passes):
                started = time.perf_counter()
                witness_tables(BatchedHour("f", hour, (), batches))
                spent.append(time.perf_counter() - started)
        return statistics.median(spent) / len(messages)
    routed = routed_as_a_task(router, plans, messages)
    filed = [filed_as_a_task(witnesses, plans, hour, f"m{i}") for i, witnesses in enumerate(routed)]
    spent = []
    with heap.settled():  # as a worker that decoded a plan is: the writer measured, not the collector
        for at in range(passes + 1):  # the first untimed, as above
            witnesses = HourWitnesses("f", hour)
            for found in filed:
                witnesses.append(found)
            started = time.perf_counter()
            witnesses.settle()
            witness_tables(witnesses)
            if at:
                spent.append(time.perf_counter() - started)
    return statistics.median(spent) / len(messages)


T = TypeVar("T")


def artifact(value: object) -> bytes:
    """``value`` pickled as a plan artifact is (:func:`loaded_after_compiling` unpickles it)."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loaded_after_compiling(artifacts: Mapping[str, bytes]) -> dict[str, Any]:
    """The routers of ``artifacts`` as workers have them: each unpickled into a heap the
    compiling left no garbage in, one after the other, as a worker unpickles its artifact into a
    fresh process. Where a copy lands decides how well its structures share the caches: two copies
    of one router (D's news, 10,000 ordinary subscriptions) unpickled at different points of a run
    differed by 4 to 7%; unpickled so, copies of one router agree within 1 to 3%."""
    gc.collect()
    return {name: pickle.loads(data) for name, data in artifacts.items()}


#: messages a router routes before the next takes its turn (:func:`per_message`)
TURN = 25
#: passes over the messages (:func:`per_message`)
PASSES = 9
#: times the writer builds an hour's tables (:func:`writer_seconds`)
WRITER_PASSES = 5


#: stage 1's variants: every block its own witness plan, and equality selections factored out
VARIANTS = {"blocks one by one": sys.maxsize, "selections factored": MIN_SHARED}
#: the default variant with its rows read in Python (without :mod:`feedrouter.kernel`)
PYTHON_ROWS = "factored, rows in Python"
#: the default variant with its rows filed by block in stage 1 (the state's format 1, before 2)
FORMAT_1 = "factored, filed in stage 1 (format 1)"


def rotations(routers: Mapping[str, T]) -> list[dict[str, T]]:
    """The routers that take turns together: the ordinary router with the one-by-one router, and
    then with the default variants (measured last: theirs is the ordinary figure reported). A
    worker routes with one router; in one rotation the one-by-one router's 15,000 plans evicted the
    caches before every router that followed it. (A's news feed at 93,207 ordinary subscriptions:
    +25% in one rotation, +23% apart, +15% in a harness pairing the factored and ordinary routers
    alone: the rotation was not the whole of the difference.)"""
    one_by_one = "blocks one by one"
    return [
        {name: routers[name] for name in ("ordinary", one_by_one)},
        {name: router for name, router in routers.items() if name != one_by_one},
    ]


def stage1(workload: Workload, sizes: Sizes) -> list[dict]:
    """Per feed and ordinary population (``--ordinary``, and as many as there are join
    subscriptions): ordinary routing vs ordinary plus the witness plans of every block and the
    clock, both ways of compiling them (:data:`VARIANTS`), alternating."""
    rows = []
    used = Counter(block for plan in workload.joins.plans.values() for block in plan.blocks)
    for count in sorted({sizes.ordinary, len(workload.joins.plans)}):
        ordinary = ordinary_population(count, workload.vocabulary, SEED)
        for feed in FEEDS:
            blocks = workload.joins.specs_for(feed)
            clock = clock_block(feed, CLOCK_PATH)
            started = time.perf_counter()
            artifacts = {"ordinary": artifact((witness_router((), ordinary), None))}
            for name, min_shared in VARIANTS.items():
                plans = witness_plans(blocks, min_shared)
                router = witness_router([*plans.bases.values(), clock], ordinary)
                artifacts[name] = artifact((router, plans))
                if name == "selections factored":  # the same, read without the kernel; filed in stage 1
                    artifacts[PYTHON_ROWS] = artifacts[name]
                    artifacts[FORMAT_1] = artifact((router, FiledByBlock(plans)))
                    witness_bases = len(plans.bases)
                del plans, router
            compiled = time.perf_counter() - started
            hour = workload.feeds[feed][len(workload.feeds[feed]) // 2]
            messages = [m.data for m in hour.messages[: sizes.stage1_messages]]
            # the one-by-one router evicts every other's structures: it takes turns with the
            # ordinary router alone, the default variants without it (a worker routes with one)
            timed: dict[str, Timed] = {}
            writer: dict[str, float] = {}
            for measured in rotations(artifacts):
                found = in_fresh_process(
                    time_routers, measured, messages, [m.data for m in hour.messages], hour.hour
                )
                timed |= found[0]
                writer |= found[1]
            whole_hour = [m.data for m in hour.messages]
            rounds = paired_workers(
                artifacts["selections factored"], whole_hour, hour.hour, FIRST_PASS_ROUNDS
            )
            decode_ordinary = in_fresh_process(decode_seconds, artifacts["ordinary"])
            del artifacts
            plain = timed["ordinary"].seconds * 1e3
            uses = sum(count for block, count in used.items() if workload.joins.specs[block].feed == feed)
            row = {
                "population": workload.population.name,
                "feed": feed,
                "ordinary subscriptions": len(ordinary),
                "block uses (2 per join)": uses,
                "distinct blocks": len(blocks),
                "witness plans (factored)": witness_bases,
                "messages": len(messages),
                "ordinary ms/msg": round(plain, 3),
            }
            for name in [*VARIANTS, PYTHON_ROWS, FORMAT_1]:
                added = (timed[name].ratio - 1) * plain + writer[name]
                row[f"added ms/msg, {name}"] = round(added, 3)
                row[f"added cost, {name}"] = f"{added / plain:.0%}"
            row["of which writer ms/msg (factored)"] = round(writer["selections factored"], 3)
            # not in the added cost (the ordinary router's results cross the shuffle too, and
            # neither is timed): what format 2's batches save over a record a message
            row["records through the shuffle ms/msg, factored / format 1 (not added)"] = (
                f"{writer[f'{SHUFFLED} selections factored']:.3f} / {writer[f'{SHUFFLED} {FORMAT_1}']:.3f}"
            )
            # the worker's two figures: the rotation above runs routers as no worker does; the
            # writer's on the stage-1 copy's batches in the same processes
            judged, paired_writer = [], statistics.median(r.writer for r in rounds) * 1e3
            for kind, (plain_of, ratio_of) in PAIRED_PASSES.items():
                label = "first pass" if kind == "first pass" else "warm in a worker"
                judged.append(
                    _added_columns(
                        row,
                        label,
                        statistics.median(plain_of(r) for r in rounds) * 1e3,
                        [ratio_of(r) for r in rounds],
                        paired_writer,
                    )
                )
            row["decode s, ordinary / factored"] = (
                f"{decode_ordinary:.2f} / {statistics.median(r.decode for r in rounds):.2f}"
            )
            row["target <= 20% (factored)"] = "yes" if max(judged) <= 0.2 else "NO"
            row["compile all three s"] = round(compiled, 1)
            rows.append(row)
    return rows


def _added_columns(row: dict, label: str, plain: float, ratios: Sequence[float], writer: float) -> float:
    """Fill ``row``'s four columns of one way of timing stage 1 (``label``): the ordinary router's
    ms a message (``plain``), what the factored router (the median of the rounds' ``ratios`` of
    it) and the writer add, in ms and as a share of ``plain``, and the least and the most of that
    share over the rounds (how far one round's figure can be trusted); return the median's share."""
    added = (statistics.median(ratios) - 1) * plain + writer
    shares = sorted(((ratio - 1) * plain + writer) / plain for ratio in ratios)
    row[f"{label}: ordinary ms/msg"] = round(plain, 3)
    row[f"{label}: added ms/msg (factored)"] = round(added, 3)
    row[f"{label}: added cost (factored)"] = f"{added / plain:.0%}"
    row[f"{label}: rounds' least / most"] = f"{shares[0]:.0%} / {shares[-1]:.0%}"
    return added / plain


def time_routers(
    artifacts: Mapping[str, bytes], messages: Sequence[bytes], whole_hour: Sequence[bytes], hour: datetime
) -> tuple[dict[str, Timed], dict[str, float]]:
    """Load the routers of ``artifacts`` and time them on ``messages`` (:func:`per_message`), and
    the writer's share with each one's plans on ``whole_hour`` (ms a message,
    :func:`writer_seconds`)."""
    routers: dict[str, tuple[Router, WitnessPlans | FiledByBlock | None]] = loaded_after_compiling(artifacts)
    timed = per_message(routers, messages, hour, PASSES, python_rows={PYTHON_ROWS})
    writer = {}
    for name, (router, plans) in routers.items():
        if plans is not None:
            with kernel.turned_off() if name == PYTHON_ROWS else contextlib.nullcontext():
                writer[name] = writer_seconds(router, plans, whole_hour, hour, WRITER_PASSES) * 1e3
            if name in (FORMAT_1, "selections factored"):
                writer[f"{SHUFFLED} {name}"] = shuffle_seconds(router, plans, whole_hour, hour) * 1e3
    return timed, writer


#: the prefix of :func:`time_routers`'s shuffle figures among its writer's
SHUFFLED = "shuffled:"


def shuffle_seconds(
    router: Router, plans: WitnessPlans | FiledByBlock, messages: Sequence[bytes], hour: datetime
) -> float:
    """Seconds a message the records a routing task sends the hour's writer (:func:`kept_as_a_task`
    on every :data:`~feedrouter.spark.tasks.FILING_BATCH` messages of ``messages``) take to cross
    Spark's shuffle as :mod:`feedrouter.spark.frames` sends them: pickled in the routing task,
    unpickled in the writer's (the median of :data:`WRITER_PASSES`; the Arrow batches and the
    shuffle's own bytes are left out)."""
    records: list[object] = []
    for start in range(0, len(messages), FILING_BATCH):
        kept = _batch_as_a_task(router, plans, messages, hour, start)
        records += kept if isinstance(kept, list) else [kept]
    spent = []
    for _ in range(WRITER_PASSES):
        started = time.perf_counter()
        for record in records:
            pickle.loads(pickle.dumps(record))
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) / len(messages)


def in_fresh_process(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` in a new Python process, as a worker loads a plan artifact: into a heap
    that holds nothing else, not among the workload's objects (100,000 join plans, the hours'
    messages, the compiler's leftovers). Measured both ways on A's news feed at 93,207 ordinary
    subscriptions, routing and filing cost +16% and +15% in a fresh process, +11% and +14% in
    the bench's (two attempts each): where the routers land moves a row by a few points, in no
    consistent direction; a fresh process is the worker's case."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def worker_passes(
    artifact_bytes: bytes, messages: Sequence[bytes], hour: datetime, passes: int
) -> tuple[float, list[tuple[float, float]]]:
    """Seconds to decode a router's artifact, and per pass over ``messages`` (``passes``, the first
    one first) seconds a message routing and filing, as a routing task of an hour's job does it:
    it decodes the plan, settles its heap, routes a batch of :data:`~feedrouter.spark.tasks.
    FILING_BATCH` messages, files their witnesses by block with their event times (with its
    plans, :func:`filed_as_a_task`; ``hour`` is the messages' hour), and on. Everything
    made on first use is paid on the first pass (a base's checks, a key's bucket, a hot bucket's
    decider, the ordinary plans' own caches), as it is in every hour's new workers. Unlike
    :func:`per_message`'s warm passes, no other router runs between the batches. Run in a fresh
    process (:func:`in_fresh_process`)."""
    gc.collect()
    clock = time.perf_counter
    started = clock()
    router, plans = pickle.loads(artifact_bytes)
    decoded = clock() - started
    found = []
    with heap.settled():  # as the worker's plan_for settles it after decoding
        for _ in range(passes):
            routing = filing = 0.0
            for start in range(0, len(messages), FILING_BATCH):
                started = clock()
                block = messages[start : start + FILING_BATCH]
                if plans is None:
                    [router.route_outcome(data) for data in block]
                else:
                    routed = routed_as_a_task(router, plans, block)
                routed_at = clock()
                if plans is not None:
                    kept_as_a_task(routed, plans, hour)
                routing, filing = routing + routed_at - started, filing + clock() - routed_at
            found.append((routing / len(messages), filing / len(messages)))
    return decoded, found


def decode_seconds(artifact_bytes: bytes) -> float:
    """Seconds to decode a router's artifact in a heap that holds nothing else (a worker's
    one-off; run it in a fresh process, :func:`in_fresh_process`)."""
    gc.collect()
    started = time.perf_counter()
    pickle.loads(artifact_bytes)
    return time.perf_counter() - started


def paired_round(
    artifact_bytes: bytes, messages: Sequence[bytes], hour: datetime, round_: int
) -> PairedRound:
    """One round of :func:`paired_workers`, in a fresh process: the filing router's artifact
    decoded twice, as a worker decodes it (the first copy's decode timed), one copy routing
    ``messages`` as a routing task with the feed's blocks does (each batch of
    :data:`~feedrouter.spark.tasks.FILING_BATCH` routed with its sink, then kept,
    :func:`kept_as_a_task`), the other routing them as the ordinary router does, its blocks set
    aside (a bench's reach into the router, as :func:`join_stage1_bench.one_router`'s; routed
    without them, the copy's heap and every other structure are the filing router's, so the pair
    differs by stage 1's work alone), batch by batch in an order shuffled every batch, over
    1 + :data:`WORKER_WARM_PASSES` passes, the first being the worker's first pass (what both
    build on first use, each builds as it goes). Even rounds give the first copy stage 1, odd
    ones the second (a copy decoded later lands elsewhere in the heap). Then the hour's writer on
    the stage-1 copy's batches (:func:`writer_seconds`)."""
    gc.collect()
    clock = time.perf_counter
    started = clock()
    first = pickle.loads(artifact_bytes)
    decoded = clock() - started
    second = pickle.loads(artifact_bytes)
    (router, plans), (ordinary, _) = (first, second) if round_ % 2 == 0 else (second, first)
    ordinary._clocks, ordinary._walked = {}, {}
    order = random.Random(SEED + round_)
    plain: list[float] = []
    ratios: list[float] = []
    with heap.settled():  # as the worker's plan_for settles it after decoding
        for _ in range(1 + WORKER_WARM_PASSES):
            spent = {True: 0.0, False: 0.0}
            for start in range(0, len(messages), FILING_BATCH):
                block = messages[start : start + FILING_BATCH]
                for stage1 in order.sample((True, False), 2):
                    started = clock()
                    if stage1:
                        kept_as_a_task(routed_as_a_task(router, plans, block), plans, hour)
                    else:
                        [ordinary.route_outcome(data) for data in block]
                    spent[stage1] += clock() - started
            plain.append(spent[False] / len(messages))
            ratios.append(spent[True] / spent[False])
    writer = writer_seconds(router, plans, messages, hour, WRITER_PASSES)
    return PairedRound(decoded, tuple(plain), tuple(ratios), writer)


@dataclass(frozen=True)
class PairedRound:
    """A round of :func:`paired_workers`: seconds to decode the artifact; per pass (the first
    pass first) seconds a message of the ordinary routing and the stage-1 copy's time over it;
    the writer's seconds a message."""

    decode: float
    ordinary: tuple[float, ...]
    ratios: tuple[float, ...]
    writer: float

    @property
    def warm_ordinary(self) -> float:
        return statistics.median(self.ordinary[1:])

    @property
    def warm_ratio(self) -> float:
        return statistics.median(self.ratios[1:])


def paired_workers(
    artifact_bytes: bytes, messages: Sequence[bytes], hour: datetime, rounds: int
) -> list[PairedRound]:
    """Stage 1 in a worker: :func:`paired_round` ``rounds`` times, each in its own fresh process.
    Paired inside one process, because a worker's speed moves between processes by more than
    stage 1 costs: each round's ordinary routing and the stage-1 copy's run batch by batch, so
    the machine's drift and the process's heap fall on both alike. Measured on C's news hour at
    10,000 ordinary subscriptions (an AMD EPYC VM whose routing moved from 165 to 295 us a
    message between processes), eight such rounds put stage 1 at +9% to +16%, where routers in
    processes of their own (the earlier way: the ordinary router's artifact in one, the filing
    router's in another, 12 rounds) gave +15% warm and +32% on the first pass, and the filing
    router's copy with its blocks set aside routed within 1% of the ordinary router's when warm
    (+6% on the first pass)."""
    return [
        in_fresh_process(paired_round, artifact_bytes, messages, hour, round_) for round_ in range(rounds)
    ]


#: the passes of a :class:`PairedRound` the benches report: per kind, a round's ordinary seconds a
#: message and its stage-1 ratio
PAIRED_PASSES: dict[str, tuple[Callable[[PairedRound], float], Callable[[PairedRound], float]]] = {
    "first pass": (lambda r: r.ordinary[0], lambda r: r.ratios[0]),
    "warm": (lambda r: r.warm_ordinary, lambda r: r.warm_ratio),
}


#: rounds of :func:`paired_workers` (a fresh process each)
FIRST_PASS_ROUNDS = 7
#: passes over the hour after the first in each of :func:`paired_workers`' processes (their median)
WORKER_WARM_PASSES = 2


def in_memory_scratch() -> str | None:
    """Where the routing task's rounds write their folders: a memory file system where the machine
    has one (``/dev/shm``), else the default temporary folder. On a local disk the page cache's
    write-back fell on some rounds and not others (rounds of one configuration differed by 2x); a
    worker writes to an object store, not to its disk, so the disk's timing is no part of the cost."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@dataclass
class _Shipped:
    """A plan artifact's bytes, as an in-process run hands them to the tasks."""

    value: bytes


#: reads of an hour per figure of :func:`filing_at_read` (the median)
FILING_READS = 5


def filing_at_read(workload: Workload, scratch: Path) -> list[dict]:
    """What the state's format 2 moves into the join stage: per feed, its middle hour written both
    ways (stage 1 filing by block, format 1; each witness plan's rows whole, format 2) to a store
    in ``scratch``, then read as the join stage reads an hour of its window (``read_joinable``):
    format 1 as stored, format 2 filed by block as it is read, with a new filing (a run's first
    hour: its bases built) and with the filing of the hour before (every later hour of the run);
    the medians of :data:`FILING_READS` reads, and the tables' bytes."""
    from feedrouter.join.filing import BlockFiling
    from feedrouter.spark.witnesses import coverage, encode, read_joinable, write_hour
    from feedrouter.storage import FileStore

    rows = []
    for feed in FEEDS:
        specs = workload.joins.specs_for(feed)
        plans = witness_plans(specs, MIN_SHARED)
        clock = clock_block(feed, CLOCK_PATH)
        router = witness_router([*plans.bases.values(), clock])
        batch = workload.feeds[feed][len(workload.feeds[feed]) // 2]
        messages = [(m.key, m.data) for m in batch.messages]
        blocks = tuple(sorted(spec.id for spec in specs))
        stores, written = {}, {}
        for label, by_block in (("format 1", True), ("format 2", False)):
            hour = collect_hour(
                router, feed, batch.hour, messages, plans, clock, CLOCK_FORMAT, LATENESS, by_block
            )
            hour.blocks = blocks
            stores[label] = FileStore(scratch / feed / label.replace(" ", "-"))
            write_hour(stores[label], hour, coverage(specs), None if by_block else plans.roots())
            written[label] = sum(len(data) for data in encode(hour).values())
        read = partial(read_joinable, feed=feed, hour=batch.hour)
        plain = _median_seconds(partial(read, stores["format 1"]))
        first = _median_seconds(partial(_filed_afresh, read, stores["format 2"], workload.joins.specs))
        later = _median_seconds(partial(read, stores["format 2"], filing=BlockFiling(workload.joins.specs)))
        rows.append(
            {
                "population": workload.population.name,
                "feed": feed,
                "messages": len(messages),
                "distinct blocks": len(specs),
                "witness plans": len(plans.bases),
                "read, format 1 s": round(plain, 4),
                "read and filed, format 2, a run's first hour s": round(first, 4),
                "read and filed, format 2, later hours s": round(later, 4),
                "filing at read ms/msg (later hours)": round((later - plain) / len(messages) * 1e3, 4),
                "tables KB, format 1 / format 2": " / ".join(f"{written[f] / 1024:.0f}" for f in written),
            }
        )
    return rows


def _filed_afresh(read: Callable[..., object], store: object, specs: Mapping[str, BlockSpec]) -> object:
    """An hour read with a new filing: a join stage run's first hour (it builds its bases)."""
    from feedrouter.join.filing import BlockFiling

    return read(store, filing=BlockFiling(specs))


def _median_seconds(work: Callable[[], object]) -> float:
    """The median of :data:`FILING_READS` timings of ``work``."""
    spent = []
    for _ in range(FILING_READS):
        started = time.perf_counter()
        work()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def stage1_task(workload: Workload, sizes: Sizes, scratch: Path) -> list[dict]:
    """Stage 1 inside the routing task a batch runs (:mod:`feedrouter.spark.tasks`, in process):
    a whole hour of one feed as input objects (its witnesses are written once per hour),
    ``route_partition`` then ``deliver_partition`` (the ordinary subscriptions' folders written,
    and with joins the hour's witness tables), with ``--ordinary`` ordinary subscriptions only
    and with the feed's blocks and clock too (selections factored), each round into fresh folders,
    the two in turn (the order reversed every round, so that neither always follows the other);
    median ms per message, and the added cost as the median of the rounds' ratios (each round's
    two runs are close in time: the machine's drift falls on both)."""
    from feedrouter.catalog import CompiledPlan, FeedConfig, Target
    from feedrouter.catalog.artifact import encode
    from feedrouter.catalog.joins import JoinsOfFeed
    from feedrouter.delivery import PlanRef
    from feedrouter.spark import tasks
    from feedrouter.spark.batch import witness_roots
    from feedrouter.spark.spec import JobSpec
    from feedrouter.spark.stores import StoreOpener
    from feedrouter.spark.witnesses import coverage
    from feedrouter.storage import FileStore

    rows = []
    for count in (sizes.ordinary,):
        population = ordinary_population(count, workload.vocabulary, SEED)
        ordinary = [(str(i), text) for i, (_, text) in enumerate(population)]
        for feed in FEEDS:
            hour = workload.feeds[feed][len(workload.feeds[feed]) // 2]
            messages = hour.messages
            inputs = FileStore(scratch / feed / "in")
            for number, message in enumerate(messages):
                inputs.put(f"{number:06d}.xml", message.data)
            config = FeedConfig(
                feed,
                inputs.uri,
                "{prefix}/",
                event_time_path=CLOCK_PATH,
                event_time_format=CLOCK_FORMAT,
                allowed_lateness=LATENESS,
            )
            plans = witness_plans(workload.joins.specs_for(feed), MIN_SHARED)
            clock = clock_block(feed, CLOCK_PATH)
            joins = JoinsOfFeed(
                {},
                {s.id: s for s in workload.joins.specs_for(feed)},
                tuple(s.id for s in workload.joins.specs_for(feed)),
                plans,
                clock,
                CLOCK_FORMAT,
            )
            variants = {
                "ordinary": (witness_router((), ordinary), None),
                "with joins": (witness_router([*plans.bases.values(), clock], ordinary), joins),
            }
            shipped = {}
            for name, (router, with_joins) in variants.items():
                artifact = encode(CompiledPlan(config, 1, router, {}, joins=with_joins), level=1)
                shipped[name] = (PlanRef(1, artifact.digest, 1), _Shipped(artifact.data), with_joins)
            del variants
            items = [(number, f"{number:06d}.xml") for number in range(len(messages))]
            times: dict[str, list[float]] = {name: [] for name in shipped}
            for round_ in range(sizes.rounds):
                for name in list(shipped)[:: -1 if round_ % 2 else 1]:
                    ref, artifact, with_joins = shipped[name]
                    folder = scratch / feed / f"{name.replace(' ', '-')}-{count}-{round_}"
                    out = (folder / "out").as_uri()
                    spec = JobSpec(
                        feed,
                        hour.hour,
                        inputs.uri,
                        (folder / "quarantine").as_uri(),
                        ref,
                        StoreOpener(),
                        1 << 24,
                        1 << 24,
                        targets={
                            sid: Target(int(sid), f"s{sid}", f"subscriber{int(sid) % 100}", out)
                            for sid, _ in ordinary
                        },
                        state_uri=(folder / "state").as_uri() if with_joins else None,
                        witness_blocks=with_joins.blocks if with_joins else (),
                        witness_coverage=coverage(with_joins.specs.values()) if with_joins else (),
                        witness_roots=witness_roots(with_joins) if with_joins else (),  # format 2
                    )
                    tasks.plan_for(spec, artifact)  # decoded before the clock starts, as a worker keeps it
                    started = time.perf_counter()
                    records = sorted(tasks.route_partition(spec, artifact, items), key=lambda r: r[0])
                    delivered = list(tasks.deliver_partition(spec, records, artifact))
                    times[name].append((time.perf_counter() - started) / len(messages))
                    assert delivered and all(kind != "failure" for kind, _ in delivered), name
                    shutil.rmtree(folder)  # in memory (in_memory_scratch): one round's folders at a time
            ms = {name: statistics.median(found) * 1e3 for name, found in times.items()}
            plain, joined = ms["ordinary"], ms["with joins"]
            paired = zip(times["ordinary"], times["with joins"], strict=True)
            ratio = statistics.median(with_joins / without for without, with_joins in paired)
            rows.append(
                {
                    "population": workload.population.name,
                    "feed": feed,
                    "ordinary subscriptions": count,
                    "messages": len(messages),
                    "routing task ms/msg": round(plain, 3),
                    "with joins ms/msg": round(joined, 3),
                    "added ms/msg": round((ratio - 1) * plain, 3),
                    "added cost (median of rounds)": f"{ratio - 1:.0%}",
                    "target <= 20%": "yes" if ratio <= 1.2 else "NO",
                    "rounds ms/msg, ordinary / with joins": " / ".join(
                        " ".join(f"{t * 1e3:.2f}" for t in times[name]) for name in times
                    ),
                }
            )
            tasks._PLANS.clear()
            heap.release()
    return rows


def collect(workload: Workload, specs: Mapping[str, BlockSpec]) -> Store:
    """Every hour's witnesses of ``specs`` (and the clock) for both feeds."""
    store: Store = {}
    for feed in FEEDS:
        plans = witness_plans(spec for spec in specs.values() if spec.feed == feed)
        clock = clock_block(feed, CLOCK_PATH)
        router = witness_router([*plans.bases.values(), clock])
        for batch in workload.feeds[feed]:
            messages = [(m.key, m.data) for m in batch.messages]
            store[(feed, batch.hour)] = collect_hour(
                router, feed, batch.hour, messages, plans, clock, CLOCK_FORMAT, LATENESS
            )
    return store


# -- stage 2: each subscription separately ----------------------------------------------------------

#: a root of a block in the window: its node, its leaves' values, its message's event time
Root = tuple[tuple[datetime, int, int], Mapping[str, tuple[str, ...]], datetime]


def separate_pairs(plan: JoinPlan, hour: datetime, store: Store) -> list[Pair]:
    """One subscription's pairs delivered in ``hour`` as a per-rule batch query computes them each
    hour, with nothing shared: its own hash index of its right block's roots over the window on its
    most selective join, probed by its left block's roots, the other value joins and the temporal
    term checked per pair."""
    hours = [hour - ONE_HOUR * k for k in range(lookback(plan.window, LATENESS), -1, -1)]
    left = _roots(store, plan.feeds[0], plan.blocks[0], hours)
    right = _roots(store, plan.feeds[1], plan.blocks[1], hours)
    key = _key_join(plan, left, right)
    rest = [join for join in plan.joins if join != key]
    index = _hashed(right, key[1])
    found = set()
    for root in left:
        for value in set(root[1].get(key[0], ())):
            found.update(
                (root[0], partner[0])
                for partner in index.get(value, ())
                if hour in (root[0][0], partner[0][0]) and _qualifies(plan, rest, root, partner)
            )
    return sorted(found)


def _key_join(plan: JoinPlan, left: Sequence[Root], right: Sequence[Root]) -> tuple[str, str]:
    """The join a per-rule operator is keyed on, as one would write it: the one whose leaves take
    the most distinct values (a ``@lang`` key would pair each message with a quarter of the window)."""
    if len(plan.joins) == 1:
        return plan.joins[0]

    def distinct(join: tuple[str, str]) -> int:
        return len({v for root in left for v in root[1].get(join[0], ())}) + len(
            {v for root in right for v in root[1].get(join[1], ())}
        )

    return max(plan.joins, key=distinct)


def _hashed(
    roots: Iterable[Root], leaf: str, into: dict[str, list[Root]] | None = None
) -> dict[str, list[Root]]:
    index: dict[str, list[Root]] = {} if into is None else into
    for root in roots:
        for value in set(root[1].get(leaf, ())):
            index.setdefault(value, []).append(root)
    return index


@dataclass
class Operator:
    """One subscription's own windowed stream-stream join (what Flink, Kafka Streams or Spark
    Structured Streaming run per rule): a hash index of each side on its key join, kept from hour to
    hour, so that an hour costs its own messages' inserts and probes, not a pass over the window."""

    plan: JoinPlan
    key: tuple[str, str]
    left: dict[str, list[Root]]
    right: dict[str, list[Root]]

    @classmethod
    def warmed(cls, plan: JoinPlan, hour: datetime, store: Store) -> Operator:
        """The operator as the hours before ``hour`` left it (built untimed: earlier hours' work)."""
        before = [hour - ONE_HOUR * k for k in range(lookback(plan.window, LATENESS), 0, -1)]
        left = _roots(store, plan.feeds[0], plan.blocks[0], before)
        right = _roots(store, plan.feeds[1], plan.blocks[1], before)
        key = _key_join(plan, left, right)
        return cls(plan, key, _hashed(left, key[0]), _hashed(right, key[1]))

    def advance(self, hour: datetime, store: Store) -> list[Pair]:
        """The hour's pairs: its left roots probe the right state with the hour's right roots in it,
        the hour's right roots probe the earlier left state; then its left roots join the state."""
        plan, (key_left, key_right) = self.plan, self.key
        rest = [join for join in plan.joins if join != self.key]
        new_left = _roots(store, plan.feeds[0], plan.blocks[0], [hour])
        new_right = _roots(store, plan.feeds[1], plan.blocks[1], [hour])
        _hashed(new_right, key_right, self.right)
        found = set()
        for root in new_left:
            for value in set(root[1].get(key_left, ())):
                found.update(
                    (root[0], partner[0])
                    for partner in self.right.get(value, ())
                    if _qualifies(plan, rest, root, partner)
                )
        for partner in new_right:
            for value in set(partner[1].get(key_right, ())):
                found.update(
                    (root[0], partner[0])
                    for root in self.left.get(value, ())
                    if _qualifies(plan, rest, root, partner)
                )
        _hashed(new_left, key_left, self.left)
        return sorted(found)


def _qualifies(plan: JoinPlan, rest: Sequence[tuple[str, str]], left: Root, right: Root) -> bool:
    """Whether a left and a right root sharing the key join's value make one of the plan's pairs."""
    return all(_compares(left[1], right[1], join) for join in rest) and _in_time(
        plan, (left[0], right[0]), left[2], right[2]
    )


def _roots(store: Store, feed: str, block: str, hours: Sequence[datetime]) -> list[Root]:
    found: list[Root] = []
    for hour in hours:
        hw = store.get((feed, hour))
        if hw is None:
            continue
        for m, n in hw.roots.get(block, ()):
            when = hw.messages[m].time
            if when is not None:
                found.append(((hour, m, n), hw.values.get((m, n), {}), when))
    return found


def _compares(
    left: Mapping[str, tuple[str, ...]], right: Mapping[str, tuple[str, ...]], join: tuple[str, str]
) -> bool:
    return not set(left.get(join[0], ())).isdisjoint(right.get(join[1], ()))


def _in_time(plan: JoinPlan, pair: Pair, left: datetime, right: datetime) -> bool:
    first, second = (left, right) if plan.left_first else (right, left)
    if plan.kind is TemporalKind.FOLLOWED_BY:
        return timedelta(0) < second - first <= plan.window
    same = plan.feeds[0] == plan.feeds[1] and pair[0][:2] == pair[1][:2]
    return abs(second - first) <= plan.window and not same


# -- stage 2: measured ------------------------------------------------------------------------------


def draw_sample(joins: JoinSet, size: int) -> list[str]:
    """A uniform sample of the subscriptions, in random order."""
    return random.Random(SEED).sample(sorted(joins.plans), min(size, len(joins.plans)))


def forget(store: Store, hours: Iterable[datetime] | None = None) -> None:
    """Drop the view cache (value indexes, memberships) of those hours (all when None)."""
    chosen = None if hours is None else set(hours)
    for (_, hour), hw in store.items():
        if chosen is None or hour in chosen:
            hw.forget()


def timed_pairs(stage: JoinStage, hour: datetime, store: Store) -> tuple[float, dict[str, list[Pair]]]:
    with heap.settled():
        started = time.perf_counter()
        pairs = stage.pairs(hour, lambda feed, h: store.get((feed, h)))
        return time.perf_counter() - started, pairs


def check_same(sid: str, separate: list[Pair], shared: list[Pair], cap: int = DEFAULT_MAX_JOIN_PAIRS) -> None:
    """The separate evaluation's pairs are the stage's; past the cap the stage keeps only the first
    ``cap + 1`` (the subscription is withheld), which must then be some of them."""
    if len(shared) > cap:
        assert len(separate) > cap and set(shared) <= set(separate), f"{sid}: differs past the cap"
    else:
        assert separate == shared, f"{sid}: separate evaluation disagrees with the join stage"


def separate_sample(
    workload: Workload,
    sids: Sequence[str],
    hour: datetime,
    store: Store,
    shared: Mapping[str, list[Pair]],
    budget: float,
) -> dict[str, tuple[float, float]]:
    """Each sampled subscription evaluated alone, as a per-rule streaming operator (its state of
    the earlier hours built untimed) and as a per-rule batch query over the window: seconds of
    each, their pairs checked against the stage's (until ``budget`` seconds are spent: what was
    measured by then is still a uniform sample)."""
    seconds: dict[str, tuple[float, float]] = {}
    started = time.perf_counter()
    with heap.settled():
        for sid in sids:
            if seconds and time.perf_counter() - started > budget:
                break
            plan = workload.joins.plans[sid]
            operator = Operator.warmed(plan, hour, store)
            begun = time.perf_counter()
            streamed = operator.advance(hour, store)
            incremental = time.perf_counter() - begun
            begun = time.perf_counter()
            queried = separate_pairs(plan, hour, store)
            seconds[sid] = (incremental, time.perf_counter() - begun)
            check_same(sid, streamed, shared.get(sid, []))
            check_same(sid, queried, shared.get(sid, []))
    return seconds


def stage2(workload: Workload, sizes: Sizes) -> list[dict]:
    """The whole population's join stage for the last hour (every block's witnesses collected over
    every hour), cold and warm, against a sample of subscriptions evaluated separately."""
    joins = workload.joins
    started = time.perf_counter()
    store = collect(workload, joins.specs)
    workload.timings["stage 1 (all blocks), all hours s"] = time.perf_counter() - started
    print(f"collected {len(joins.specs)} blocks in {time.perf_counter() - started:.1f} s", flush=True)
    hours = [batch.hour for batch in workload.feeds[OWN]]
    hour, number = hours[-1], len(hours) - 1
    stage = JoinStage(joins.plans.values(), joins.specs, lateness=LATENESS)
    # warm: the hour before's run built the views of every earlier hour (immutable, kept: the view
    # cache); this hour's own are new. Cold: every view of the window rebuilt.
    stage.pairs(hours[-2], lambda feed, h: store.get((feed, h)))
    forget(store, [hour])
    warm_s, shared = timed_pairs(stage, hour, store)
    forget(store)
    cold_s, _ = timed_pairs(stage, hour, store)
    n = len(joins.plans)
    separate = separate_sample(workload, draw_sample(joins, sizes.sample), hour, store, shared, sizes.budget)
    separate_s = n * statistics.fmean(s for s, _ in separate.values())
    query_s = n * statistics.fmean(s for _, s in separate.values())
    counts = [len(pairs) for pairs in shared.values()]
    row = {
        "population": workload.population.name,
        "hour": f"h{number} ({hour:%H}:00)",
        "subscriptions": n,
        "pairs in the hour": sum(min(c, DEFAULT_MAX_JOIN_PAIRS) for c in counts),
        "with pairs": sum(1 for c in counts if c),
        "withheld (cap)": sum(1 for c in counts if c > DEFAULT_MAX_JOIN_PAIRS),
        "pairs / subscription (median of those with pairs)": statistics.median(
            [c for c in counts if c] or [0]
        ),
        "sampled separately": len(separate),
        "identical pairs": "yes",
        "shared s (warm)": round(warm_s, 2),
        "shared s (cold)": round(cold_s, 2),
        "separate s (est.)": round(separate_s, 1),
        "separate / shared": round(separate_s / warm_s, 1),
        "target >= 100x": "yes" if separate_s >= 100 * warm_s else "NO",
        "per-rule window query s (est.)": round(query_s, 1),
        "query / shared": round(query_s / warm_s, 1),
        "view cache gain (cold / warm)": f"{cold_s / warm_s:.2f}x",
        "measured separate s": round(sum(s for s, _ in separate.values()), 2),
    }
    heap.release()
    return [row]


# -- templates --------------------------------------------------------------------------------------


def templates(workload: Workload) -> list[dict]:
    plans = list(workload.joins.plans.values())
    by_k: dict[int, set[str]] = {}
    subscriptions = Counter(len(plan.joins) for plan in plans)
    for plan in plans:
        by_k.setdefault(len(plan.joins), set()).add(plan.template.key)
    return [
        {
            "population": workload.population.name,
            "value joins": k,
            "subscriptions": subscriptions[k],
            "templates (ours)": len(by_k[k]),
            "paper Table 3, flat": PAPER_FLAT.get(k, ""),
            "paper Table 3, three-level": PAPER_COMPLEX.get(k, ""),
            "examples": "; ".join(sorted(by_k[k])[:2]),
        }
        for k in sorted(by_k)
    ]


def sharing(workload: Workload) -> dict:
    plans = list(workload.joins.plans.values())
    return {
        "population": workload.population.name,
        "shape": workload.population.shape,
        "subscriptions": len(plans),
        "dropped (@lang only)": workload.dropped,
        "distinct blocks news / blogs": " / ".join(str(len(workload.joins.specs_for(f))) for f in FEEDS),
        "groups (blocks, joins)": len({(p.blocks, p.joins) for p in plans}),
        "distinct pair keys": len({p.key for p in plans}),
        "templates": len({p.template.key for p in plans}),
        "vocabulary authors/titles/categories/links": (
            f"{workload.vocabulary.authors}/{workload.vocabulary.titles}/"
            f"{workload.vocabulary.categories}/{workload.vocabulary.links}"
        ),
        **{k: round(v, 1) for k, v in workload.timings.items()},
    }


# -- report -----------------------------------------------------------------------------------------


def plot(rows: Sequence[dict], path: Path) -> bool:
    if not rows:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{row['population']}: {row['separate / shared']}x" for row in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [row["shared s (warm)"] for row in rows], 0.4, label="join stage (shared)")
    ax.bar(
        [i + 0.2 for i in x], [row["separate s (est.)"] for row in rows], 0.4, label="each separately (est.)"
    )
    ax.set_yscale("log")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("stage-2 seconds for one hour")
    ax.set_title(f"Stage 2, {rows[0]['subscriptions']:,} join subscriptions per population")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


POPULATIONS_TEXT = """\
A (dense): the join generator's defaults (1-4 value joins, Zipf 1.0; 10% cross-feed; 30% `within`;
local conditions 0.5; binding predicates 0.2), windows 1-24 h, the vocabulary scaled with the item
rate, values Zipf 0.3. B (medium): at most 2 value joins, 50% cross-feed, 60% `within`, local
conditions 0.1, binding predicates 0.05, windows 12-24 h only, a 4x larger vocabulary, uniform
values. C and D (selective): A's and B's subscriptions over a 100x (C) and 400x (D) larger
vocabulary, values that behave like identifiers, as correlation rules' join keys do. Most blocks
read `news` (the subscriptions' own feed); the right block of a cross-feed join reads `blogs`.
Subscriptions whose only value joins compare `@lang` (4 values) are dropped and counted. `groups`:
subscriptions with the same blocks and value joins (they share candidate pairs); `distinct pair
keys`: also the same temporal term (they share pairs)."""

STAGE2_TEXT = """\
The last hour, with its full lookback (window + 1 h lateness). Every block's witnesses are collected
over every hour first (stage 1 for the whole population, timed in the populations table).
Shared: `JoinStage.pairs` for every subscription at once; warm: the hour before was joined first,
so the earlier hours' value indexes and node memberships (the view cache: an hour's witnesses never
change once written) are built and only this hour's are new; cold: every one rebuilt.
`separate`: each subscription as its own windowed stream-stream join operator, the strong baseline
(what Flink, Kafka Streams or Spark Structured Streaming run per rule: a hash index per side on its
most selective join, kept from hour to hour, so an hour costs its own messages' inserts and probes;
its state of the earlier hours is built untimed). `per-rule window query`: each subscription as a
batch query over its window every hour. Both share nothing but stage 1; a uniform sample runs both,
their pairs asserted equal to the stage's, and the population's time is N x the sample's mean.
The stage works set at a time, as paper 001's relational stage does: a value slice's matches are
arrays of node numbers (NumPy), each group takes its pairs from them with a few array operations
(its blocks' nodes, its other value joins, its windows), a pair's tuple is made once whatever
lists it goes to, and each list is filled in XQuery's order (no sort afterwards). What is left
follows the output: where each subscription receives hundreds of pairs an hour (A: 300 million
list entries in the hour), the shared stage's cost is mostly those entries, and the ratio with
them."""

STAGE1_TEXT = """\
One hour's first messages of each feed (hour 12), `route_outcome` by a router with the ordinary
population only, then by routers with the same population plus the feed's blocks and its clock, each
message's witnesses also kept as a routing task keeps them with its event time (its `pubDate` parsed
and admitted in the hour, then each witness plan's rows whole, the state's format 2, a turn's
messages as one record of columns: `feedrouter.join.batches`, what a routing task sends the hour's
writer, a record every 32 messages; runs before a488929 kept a record a message,
`WitnessPlans.collect`; the join stage files them by block as it reads the hour, measured below;
runs before 96f11d0 kept them without the time, 2.7 to 3.5 us a message less), the routers taking
turns every 25 messages over 9 passes, in an order shuffled every turn (a router finds the caches as
the router before it left them; a fixed rotation had the factored router always follow the
one-by-one router, whose plans evict everything); the one-by-one router takes turns with the
ordinary router alone, the two default variants with it apart, each set in a fresh process that
loads their artifacts and nothing else, as a worker does (A's news feed at 93,207 ordinary
subscriptions measured a few points either side of the same figure in the bench's own process: rows
move by that much from run to run). To that, the hour's writer: the whole hour's messages routed and
kept, then the writer's tables built from them (`BatchedHour` and
`feedrouter.spark.witnesses.tables`: each plan's roots, each leaf's values and each fragment,
sorted; format 1: `HourWitnesses.settle` and the same tables), the median of 5 builds divided by the
hour's messages; writing them as Parquet is left out, as writing delivery parts is left out of the
ordinary router's time (`of which writer`). `records through the shuffle`: the kept records of the
whole hour pickled and unpickled, as they cross Spark's shuffle between the routing tasks and the
writer's (the median of 5), format 2's batches and format 1's record a message; not in the added
cost, as the ordinary router's results cross it untimed too. `ordinary ms/msg`: the median of the
passes' means; `added ms/msg`: the median over turns of a router's time over the ordinary router's
on the same turn's messages, minus one, times `ordinary ms/msg` (paired, close in time: the
machine's drift falls on both alike), plus the writer's; `added cost` that over `ordinary ms/msg`;
with 10,000 ordinary subscriptions and with as many as there are join subscriptions. Two ways of
compiling the blocks: `blocks one by one` (every distinct block its own witness plan, the earlier
design) and `selections factored` (the default, `feedrouter.join.selections`: the conditions a
node's leaf values decide are factored out, blocks that differ only in them share one base witness
plan, and filing finds a block by hash look-up of a leaf value or by a needle); `witness plans`
counts the latter's compiled plans. Both read a bound node's row (its plain children's values and
copies, its own attributes) with one call of the compiled kernel (`feedrouter.kernel`), and the
writer's loops over the hour's filed messages and rows are compiled too; `factored, rows in Python`
is the default without the kernels, and `factored, filed in stage 1 (format 1)` the default as it
was before format 2: each message's rows filed by block in the routing task (`message_witnesses`),
the writer's roots by block. Every router is measured as a routing worker has it, unpickled from its
artifact, each its own copy (so that none finds another's structures warm). The ordinary population:
`//item` filters on one author, category, ticker or title word (some with `@lang`), values uniform
over the vocabulary: what subscribers of an item feed ask for; the selection index serves them (at
10,000 of them, on C's news hour, `Router.profile` puts 45% of routing in the shared selection, 39%
in parsing and the NFA, 11% in the candidates' Selection and 4% in the message factory; lxml's parse
alone is 5%).

The passes above are warm: a router's structures have seen the messages before. A worker of an
hour's job is not: it decodes the plan, settles its heap and routes its share of the hour once,
building what it builds on first use (a base's checks, a key's bucket, a hot bucket's generated
function) as it goes. `first pass`: in each of 7 rounds a fresh process decodes the factored
router's artifact twice (`decode s`: a worker's one-off, left out of the per-message figures; the
ordinary router's decoded in a process of its own); one copy routes the whole hour as a routing
task does, each batch of 32 routed with its sink and kept, the other routes it with its blocks set
aside, the ordinary routing of the same router (`first pass: ordinary ms/msg`, the rounds'
median), batch by batch in a shuffled order, the copies' roles swapped every round. `first pass:
added`: the median over rounds of the stage-1 copy's time over the other's on the first pass,
minus one, times `first pass: ordinary ms/msg`, plus the writer's (on the stage-1 copy's batches
in the same processes, the rounds' median); `rounds' least / most`: the same
share from the round that gave the least and the one that gave the most. `warm in a worker`: the 2
passes over the hour that follow the first in the same processes (their median), paired the same
way: a worker that routes with the plan again. Paired inside one process because a process's
speed moves by more than stage 1 costs (runs before this way, up to 7ee99dd, timed each router in
processes of its own, the two in turn: one round's share moved by tens of points). The target is
judged on the larger of the worker's two added costs (their medians; runs up to 7ee99dd judged on
the largest of three, the warm rotation's with them: routers rotating through one process, as no
worker runs them, each its own copy, which moves it by up to 5%)."""

STAGE1_TASK_TEXT = """\
The same comparison inside the routing task a batch runs (`feedrouter.spark.tasks`, in one process,
no Spark): the whole hour 12 of each feed as input objects, `route_partition` then
`deliver_partition` with 10,000 ordinary subscriptions, their folders written; with joins, the
routers above (selections factored) and the hour's witness tables written once (what the hour's
writer task does). The two take turns, round by round (the order reversed every round), into fresh
folders on a memory file system (`/dev/shm`; on a local disk the page cache's write-back fell on some
rounds and not others, and rounds of one configuration differed by 2x); ms per message are the
medians of the rounds, the added cost the median of the rounds' paired ratios (each round's figures
are in the last column). This is what a batch's routing stage costs per message with and without
the feed's join blocks: reading and splitting objects, routing, the subscribers' deliveries, the
witnesses' shuffle records and Parquet tables. Most of the task's cost is its deliveries (nearly
every one of the 10,000 subscriptions gets a folder in the hour, three files each); the table above,
without deliveries, is the figure stage 1's target is judged on."""

FILING_TEXT = """\
Stage 1 writes each witness plan's rows whole (the state's format 2), and the join stage files them
by block as it reads an hour (`feedrouter.join.filing`): the selections stage 1 ran per message in
the pass that routes it (format 1: `factored, filed in stage 1` in the table above, measured beside
the default) now run once per hour read. `filing_at_read`: each feed's middle hour written both ways,
then read as an engine reads an hour of its window (`read_joinable`), the median of 5 reads; a run's
first hour builds the bases it files by, later hours reuse them. A join stage run reads its hour and
its lookback (up to window plus lateness: 25 hours here), so it pays the first figure once and the
later one for every other hour; stage 2's table above was measured on hours filed in memory, so its
shared times leave this out (compare them with the lookback times the later figure). The tables'
bytes: format 2 keeps every node a base binds (its blocks' values and fragments), format 1 only
those some block bound.
"""

TEMPLATES_TEXT = """\
Distinct `plan.template.key` per number of value joins, against paper 001's Table 3 (all possible
templates for a flat two-level schema and for a three-level one). The paper's experiments saw 6
templates (flat) and 6 growing to 22 (three-level) as queries grew to 100,000, and 2, 6, 20, 39 for
K = 2..5. Our leaves share a node only when they are attributes of the bound node (`@lang`, the one
attribute leaf; element children may repeat, e.g. 0-2 `category`), so nearly every join graph is a
perfect matching of distinct leaves: one template per k."""


def columns(rows: Sequence[dict]) -> list[str]:
    """Every column of the rows, in first-seen order (rows kept from an earlier run may lack some)."""
    return list(dict.fromkeys(key for row in rows for key in row))


def report(out: Path, sizes: Sizes, tables: dict[str, list[dict]], wall: float, info: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        write_csv(rows, out / f"join_{name}.csv")
    plotted = plot(tables["stage2"], out / "join_stage2.png")
    lines = [
        "# Join subscriptions: the shared join stage, the view cache, templates, stage 1's cost",
        "",
        f"`bench/join_bench.py{' --quick' if sizes == QUICK else ''}`: {len(FEEDS)} feeds x {sizes.hours} "
        f"hours x {sizes.items:,} items, {sizes.subscriptions:,} join subscriptions per population, "
        f"stage 2 on the last hour, each subscription evaluated separately on a sample of {sizes.sample}. "
        f"Wall time {wall / 60:.1f} min (of this run: a run of some populations keeps the others' rows "
        "from the run before, the stage tables' `code` and `cpu` columns saying which code measured "
        "each, where).",
        "",
        markdown_table([info], list(info)),
        "## Populations",
        "",
        POPULATIONS_TEXT,
        "",
        markdown_table(tables["populations"], columns(tables["populations"])),
        "## Stage 2: shared vs each subscription separately, and the view cache",
        "",
        STAGE2_TEXT,
        "",
        markdown_table(tables["stage2"], columns(tables["stage2"])),
        *(["![stage 2](join_stage2.png)", ""] if plotted else []),
        "## Stage 1: routing with the witness blocks",
        "",
        STAGE1_TEXT,
        "",
        markdown_table(tables["stage1"], columns(tables["stage1"])),
        "### Inside the routing task",
        "",
        STAGE1_TASK_TEXT,
        "",
        markdown_table(tables["stage1_task"], columns(tables["stage1_task"])),
        "### What the join stage takes over: filing at read",
        "",
        FILING_TEXT,
        "",
        markdown_table(tables["filing"], columns(tables["filing"])),
        "## Templates against paper 001",
        "",
        TEMPLATES_TEXT,
        "",
        markdown_table(tables["templates"], columns(tables["templates"])),
    ]
    (out / "join.md").write_text("\n".join(lines))
    print("\n".join(lines))


def log(started: float, text: str) -> None:
    print(f"[{time.perf_counter() - started:7.1f} s] {text}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, results in results/quick/")
    parser.add_argument("--populations", default="A,B,C,D", help="which populations (A,B,C,D)")
    for name in Sizes.__dataclass_fields__:
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help="override the size")
    parser.add_argument("--out", type=Path, help="results folder (default results/ or results/quick/)")
    parser.add_argument(
        "--stages", default="1,2", help="which stages to measure (1,2); the other's rows are kept from before"
    )
    args = parser.parse_args()
    stages = set(args.stages.split(","))
    sizes = QUICK if args.quick else FULL
    changed = {k: v for k, v in vars(args).items() if k in Sizes.__dataclass_fields__ and v is not None}
    sizes = replace(sizes, **changed)
    info = machine()
    started = time.perf_counter()
    tables: dict[str, list[dict]] = {
        "populations": [],
        "stage1": [],
        "stage1_task": [],
        "filing": [],
        "stage2": [],
        "templates": [],
    }
    for population in (p for p in POPULATIONS if p.name in args.populations.split(",")):
        workload = build_workload(population, sizes)
        log(started, f"{population.name}: compiled {len(workload.joins.plans):,} join subscriptions")
        tables["templates"] += templates(workload)
        if "1" in stages:
            tables["stage1"] += stage1(workload, sizes)
            log(started, f"{population.name}: stage 1 {tables['stage1'][-2:]}")
            with tempfile.TemporaryDirectory(prefix="join-bench-", dir=in_memory_scratch()) as scratch:
                tables["stage1_task"] += stage1_task(workload, sizes, Path(scratch))
            with tempfile.TemporaryDirectory(prefix="join-bench-", dir=in_memory_scratch()) as scratch:
                tables["filing"] += filing_at_read(workload, Path(scratch))
            log(started, f"{population.name}: stage 1 in the task {tables['stage1_task'][-2:]}")
        if "2" in stages:
            tables["stage2"] += stage2(workload, sizes)
        tables["populations"].append(sharing(workload))
        print(tables["populations"][-1], tables["stage2"][-1:], flush=True)
    info["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = args.out or (RESULTS / "quick" if args.quick else RESULTS)
    for row in tables["stage1"] + tables["stage1_task"] + tables["filing"] + tables["stage2"]:
        # rows of an earlier run kept below say which code measured them, on which machine
        row["code"], row["cpu"] = info["code"], info["cpu"]
    tables = {
        name: sorted(
            kept_rows(out / f"join_{name}.csv", {row["population"] for row in rows}) + rows,
            key=lambda row: row["population"],
        )
        for name, rows in tables.items()
    }
    report(out, sizes, tables, time.perf_counter() - started, info)


def kept_rows(path: Path, measured: set[str]) -> list[dict]:
    """The rows of populations this run did not measure, from the results already in ``out`` (a
    run of some populations replaces theirs and keeps the others', each row naming its code)."""
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return [
            {key: _number(value) for key, value in row.items()}
            for row in csv.DictReader(fh)
            if row["population"] not in measured
        ]


def _number(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


if __name__ == "__main__":
    main()
