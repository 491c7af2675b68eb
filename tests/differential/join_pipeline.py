"""The join pipeline in one process (stage 1 per feed hour, stage 2 per hour) and its comparison
with Saxon running the same texts over every message up to each hour."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lxml import etree

from feedrouter import Router
from feedrouter.join.clock import parse_event_time
from feedrouter.join.collect import collect_hour
from feedrouter.join.filing import BlockFiling
from feedrouter.join.plan import JoinSet, clock_block
from feedrouter.join.relations import HourWitnesses, admitted
from feedrouter.join.selections import MIN_SHARED, witness_plans
from feedrouter.join.stage import JoinDelivery, JoinStage, Pair
from feedrouter.lang import parse
from feedrouter.limits import JoinLimits
from feedrouter.spark.witnesses import coverage, read_hour, read_joinable, write_hour
from feedrouter.storage import open_store
from tests.differential.join_oracle import SaxonJoinOracle
from tests.differential.oracle import canonical

#: feed -> hour -> messages (object key, document) in stream order
Feeds = Mapping[str, Mapping[datetime, Sequence[tuple[str, bytes]]]]

CLOCK_PATH = "//pubDate"
CLOCK_FORMAT = "rfc822"


@dataclass
class JoinPipeline:
    """Join subscriptions compiled for their feeds, with the witnesses of the hours collected so far."""

    subscriptions: Mapping[str, tuple[str, str]]  # sid -> (own feed, text)
    feeds: Sequence[str]
    lateness: timedelta = timedelta(hours=1)
    max_pairs: int = 100_000
    min_shared: int = MIN_SHARED  # 1: every block's selections factored out (the most shared bases)
    joins: JoinSet = field(default_factory=JoinSet)
    store: dict[tuple[str, datetime], HourWitnesses] = field(default_factory=dict)
    #: a folder: stage 1 writes each hour there in the state's format 2 (each witness plan's rows
    #: whole) and the hour is read back filed by block, as the join stage reads it; None: filed by
    #: block in memory
    state: Path | None = None
    #: with a ``state`` folder, the hours stage 1 writes in format 1 (filed by block in stage 1, as
    #: hours written before format 2 were): a window that reads both formats
    format_1_hours: frozenset[datetime] = frozenset()

    def __post_init__(self) -> None:
        for sid, (feed, text) in self.subscriptions.items():
            self.joins.add(sid, parse(text), feed)
        self.clocks = {feed: clock_block(feed, CLOCK_PATH) for feed in self.feeds}
        self.plans = {feed: witness_plans(self.joins.specs_for(feed), self.min_shared) for feed in self.feeds}
        self.routers = {feed: self._router(feed) for feed in self.feeds}
        self.stage = JoinStage(
            self.joins.plans.values(),
            self.joins.specs,
            lateness=self.lateness,
            limits=JoinLimits(pairs_per_hour=self.max_pairs),
        )

    def _router(self, feed: str) -> Router:
        router = Router()
        for spec in [*self.plans[feed].bases.values(), self.clocks[feed]]:
            router.add_witness(spec)
        return router

    def collect(self, feed: str, hour: datetime, messages: Iterable[tuple[str, bytes]]) -> None:
        found = collect_hour(
            self.routers[feed],
            feed,
            hour,
            messages,
            self.plans[feed],
            self.clocks[feed],
            CLOCK_FORMAT,
            self.lateness,
            by_block=self.state is None or hour in self.format_1_hours,
        )
        if self.state is not None:
            found = self._through_the_store(found, hour not in self.format_1_hours)
        self.store[(feed, hour)] = found

    def _through_the_store(self, found: HourWitnesses, format_2: bool) -> HourWitnesses:
        """An hour written to the witness store and read back whole as the join stage reads it:
        in format 2, plan rows whose roots are filed by block where they are read
        (:class:`~feedrouter.join.filing.BlockFiling`); in format 1, filed by block already."""
        assert self.state is not None
        plans, specs = self.plans[found.feed], self.joins.specs_for(found.feed)
        found.blocks = tuple(sorted(spec.id for spec in specs))
        store = open_store(self.state.as_uri())
        write_hour(store, found, coverage(specs), plans.roots() if format_2 else None)
        back = read_hour(store, found.feed, found.hour, ("messages", "values", "fragments"))
        joinable = read_joinable(store, found.feed, found.hour, BlockFiling(self.joins.specs))
        assert back is not None and joinable is not None
        runs = joinable._columns.roots  # type: ignore[union-attr]
        bounds = runs.starts.tolist()
        nodes = list(zip(runs.messages.tolist(), runs.nodes.tolist(), strict=True))
        back.roots = {name: nodes[bounds[at] : bounds[at + 1]] for at, name in enumerate(runs.names)}
        return back

    def join(self, hour: datetime) -> dict[str, JoinDelivery]:
        return self.stage.run(hour, lambda feed, h: self.store.get((feed, h)))


def oracle_time(data: bytes, hour: datetime, lateness: timedelta) -> datetime | None:
    """A message's event time as the manifest gives it to Saxon, read without the router."""
    found = etree.fromstring(data).xpath("string((//pubDate)[1])")
    return admitted(parse_event_time(found or None, CLOCK_FORMAT), hour, lateness)


def saxon_messages(
    feeds: Feeds, upto: datetime, lateness: timedelta
) -> dict[str, list[tuple[bytes, datetime | None]]]:
    return {
        feed: [
            (data, oracle_time(data, hour, lateness))
            for hour in sorted(hours)
            if hour <= upto
            for _, data in hours[hour]
        ]
        for feed, hours in feeds.items()
    }


def saxon_results(
    oracle: SaxonJoinOracle,
    feeds: Feeds,
    subscriptions: Mapping[str, tuple[str, str]],
    upto: datetime,
    lateness: timedelta,
) -> dict[str, bytes]:
    """Saxon's result of every subscription over all messages up to ``upto`` (one batch per feed)."""
    messages = saxon_messages(feeds, upto, lateness)
    found: dict[str, bytes] = {}
    for own in sorted({feed for feed, _ in subscriptions.values()}):
        sids = [sid for sid, (feed, _) in subscriptions.items() if feed == own]
        results = oracle.run_all(messages, own, [subscriptions[sid][1] for sid in sids])
        found |= {sid: b"".join(items) for sid, items in zip(sids, results, strict=True)}
    return found


def compare_with_saxon(
    oracle: SaxonJoinOracle,
    pipeline: JoinPipeline,
    feeds: Feeds,
    delivered: Mapping[datetime, Mapping[str, JoinDelivery]],
) -> dict[str, int]:
    """Every subscription's pairs delivered in the hours up to ``h``, in XQuery's order, equal
    Saxon's result over all messages up to ``h``, for every hour ``h``."""
    hours = sorted(delivered)
    counts = {"subscriptions": len(pipeline.subscriptions), "pairs": 0, "compared": 0}
    for upto in hours:
        expected = saxon_results(oracle, feeds, pipeline.subscriptions, upto, pipeline.lateness)
        for sid, (_, text) in pipeline.subscriptions.items():
            ours: list[tuple[Pair, bytes]] = []
            for hour in hours:
                if hour <= upto:
                    found = delivered[hour][sid]
                    assert found.withheld is None, found.withheld
                    ours.extend(zip(found.pairs, found.results, strict=True))
            # a pair whose return is the empty sequence gives no item, so nothing is delivered for it
            assert all(ours_result for _, ours_result in ours), f"{sid}: an empty result was delivered"
            keys = [pair for pair, _ in ours]
            assert len(set(keys)) == len(keys), f"{sid}: a pair was delivered twice"
            ours.sort(key=lambda item: item[0])
            got = b"".join(result for _, result in ours)
            # one result per pair, of one or more items: compared as the sequence they make together
            assert canonical(got) == canonical(expected[sid]), (sid, upto, text)
            counts["compared"] += 1
            counts["pairs"] += len(ours) if upto == hours[-1] else 0
    return counts
