"""Stage 2 on Spark SQL: one relational conjunctive query per template (paper 001, §4.3-4.4).

The witness relations of the window's hours are read by the executors, straight from the state
store's Parquet (:func:`~feedrouter.spark.witnesses.read_relation`, one task per feed and hour;
nothing of them passes through the driver), and become two cached views: ``roots`` (paper 001's
R_bin reduced to the bound node, with its message's event time: R_docTS) and ``vals`` (R_doc: leaf
path and string value per bound node), blocks and leaf paths by their number in the run
(:class:`Numbers`). Every join subscription is one row of its template's R_T table: its blocks
and feeds, the path each leaf metavariable stands for, its window and temporal kind, and its
driving value join (the most selective in the hour). In paper 001's order, :func:`matched_sql`
finds the node pairs sharing a value of a driving join's leaves, once for all templates (this
hour's slice against the window), cached; per template, :func:`paired_sql` gives each matched
node its block set and event time, cached, and :func:`pairs_sql` the subscriptions each pair
serves (once per combination of block sets), the other value joins (against each pair's matching
leaf paths) and the temporal term: each (subscription, pair) once, as XQuery's ``for`` gives each
pair of nodes once. Subscriptions alike but for their name are queried once.

The pairs (at most the cap + 1 of a subscription) come back to the driver as Arrow, which
assembles and delivers them like the in-process engine
(:meth:`~feedrouter.join.stage.JoinStage.deliveries`): both engines give the same pairs (tests
run them side by side).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from feedrouter.join.filing import BlockFiling
from feedrouter.join.plan import JoinPlan
from feedrouter.join.relations import ONE_HOUR
from feedrouter.join.stage import Pair, reach_of_feeds
from feedrouter.join.templates import Template
from feedrouter.lang.ast import TemporalKind
from feedrouter.limits import DEFAULT_MAX_JOIN_PAIRS
from feedrouter.spark.frames import arrow_schema
from feedrouter.spark.session import executor_cores
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import WitnessHours, read_relation, still_there

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The relations' columns as the views hold them (Spark DDL): blocks and leaf paths by their
#: number in the run (:class:`Numbers`).
LISTING = "feed string, hour_s bigint"
RELATIONS = {
    "roots": "feed string, hour_s bigint, message int, node int, block int, time_us bigint",
    "values": "feed string, hour_s bigint, message int, node int, leaf int, value string",
}
#: The column of each relation that :class:`Numbers` numbers.
_NUMBERED = {"roots": "block", "values": "leaf"}
#: Rows per Arrow batch a reading task yields.
_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class WitnessSource:
    """Where the executors read witness hours: the state store's URI and the opener that opens it
    in every process (picklable: it travels with the tasks; credentials stay hidden)."""

    stores: StoreOpener
    state_uri: str
    #: the (feed, hour)s the join stage found written before it began: one gone while it runs (the
    #: retention DAG) fails it with FR609 (retried, back-filled), never pairs without that hour
    required: frozenset[tuple[str, datetime]] = frozenset()
    #: what files an hour of the state's format 2 by the join's blocks as it is read (None: the
    #: hours are read as their roots table holds them)
    filing: BlockFiling | None = None

    def hours(self) -> WitnessHours:
        """A reader of the witness hours from this source (in the process that calls it)."""
        return WitnessHours(self.stores.open(self.state_uri), self.required, self.filing)


@dataclass(frozen=True)
class Numbers:
    """The blocks and compared leaf paths of a run's subscriptions, numbered: the relations carry
    integers, which Spark groups, sorts and compares much faster than strings (a node's block sets
    are arrays of them), and the rows of a block or leaf no subscription uses are left out as the
    executors read them."""

    blocks: tuple[str, ...]
    leaves: tuple[str, ...]

    @classmethod
    def of(cls, plans: Iterable[JoinPlan]) -> Numbers:
        plans = list(plans)
        blocks = {block for plan in plans for block in plan.blocks}
        leaves = {path for plan in plans for path in _compared(plan).values()}
        leaves |= {path for plan in plans for join in plan.joins for path in join}
        return cls(tuple(sorted(blocks)), tuple(sorted(leaves)))

    def block(self, block: str) -> int:
        return self._numbered[0][block]

    def leaf(self, path: str) -> int:
        return self._numbered[1][path]

    @cached_property
    def _numbered(self) -> tuple[dict[str, int], dict[str, int]]:
        return _numbered(self.blocks), _numbered(self.leaves)

    def of_relation(self, name: str) -> tuple[str, ...]:
        """What the numbered column of relation ``name`` holds, in the order of its numbers."""
        return self.blocks if name == "roots" else self.leaves


def _compared(plan: JoinPlan) -> dict[str, str]:
    """The leaf path of each metavariable of the plan's template that a value join compares (R_T's
    ``p_`` columns)."""
    joined = set(itertools.chain.from_iterable(plan.template.value_edges))
    paths = plan.template.paths(plan.bindings)
    return {var: paths[var] for var in plan.template.variables if var in joined}


def _numbered(texts: Sequence[str]) -> dict[str, int]:
    return {text: number for number, text in enumerate(texts)}


def spark_pairs(
    spark: SparkSession,
    plans: Sequence[JoinPlan],
    hour: datetime,
    source: WitnessSource,
    lateness: Any,
    max_pairs: int = DEFAULT_MAX_JOIN_PAIRS,
) -> dict[str, list[Pair]]:
    """Every subscription's qualifying pairs delivered in ``hour``, computed on ``spark``; at most
    ``max_pairs + 1`` of a subscription (past its cap it is withheld: never more are collected)."""
    if not plans:
        return {}
    reach = reach_of_feeds(plans, lateness)
    # subscriptions that differ in nothing but their name get the same pairs: queried once
    alike: dict[tuple[object, ...], list[str]] = {}
    for plan in plans:
        alike.setdefault((plan.feeds, *plan.key), []).append(plan.sid)
    firsts = [plan for plan in plans if alike[(plan.feeds, *plan.key)][0] == plan.sid]
    views = _Views(spark, uuid.uuid4().hex[:12], Numbers.of(firsts))
    found: dict[str, list[Pair]] = {plan.sid: [] for plan in firsts}
    with _sized_shuffles(spark), views:
        listed = [
            (feed, _seconds(hour - ONE_HOUR * k))
            for feed in sorted(reach)
            for k in range(reach[feed], -1, -1)
        ]
        views.register(source, listed)
        driving = views.driving(firsts, _seconds(hour))
        groups = _by_template(firsts)
        rts = {template: views.rt(template, group, driving) for template, group in groups.items()}
        edges = views.edges(rts.values())
        # cached: every template's node pairs are taken from it
        with views.cached("matched", matched_sql(edges, views.names()["vals"], _seconds(hour))) as matched:
            for number, (template, rt) in enumerate(rts.items()):
                names = views.names(rt) | {"matched": matched}
                # cached: the pairs' subscriptions are found from it and it is joined with them
                with views.cached(f"paired_{number}", paired_sql(names)) as paired:
                    query = pairs_sql(template, names | {"paired": paired}, _shuffles(spark))
                    query = capped(query, max_pairs + 1)
                    _collect(spark.sql(query), found)
    shared: dict[str, list[Pair]] = {}
    for sids in alike.values():
        pairs = sorted(found[sids[0]])
        shared.update((sid, pairs) for sid in sids)  # one list, as the in-process stage shares it
    return shared


#: Spark's default number of shuffle partitions, which a session's owner has not changed.
_DEFAULT_SHUFFLES = "200"
_SHUFFLES = "spark.sql.shuffle.partitions"


@contextmanager
def _sized_shuffles(spark: SparkSession) -> Iterator[None]:
    """Shuffle partitions sized to the session's cores while the stage runs, when the session's
    owner left Spark's default of 200: on a few cores 200 near-empty partitions per shuffle of a
    dozen cost more than the join (measured: a local[2] stage twice as slow). A classic session
    only: a Spark Connect client cannot see the cluster's cores, and keeps the server's setting."""
    cores = executor_cores(spark)
    current = spark.conf.get(_SHUFFLES)
    if not cores or current != _DEFAULT_SHUFFLES:
        yield
        return
    spark.conf.set(_SHUFFLES, str(max(2, 2 * cores)))
    try:
        yield
    finally:
        spark.conf.set(_SHUFFLES, current)


def _shuffles(spark: SparkSession) -> int:
    """The session's number of shuffle partitions (0: not a number Spark gives)."""
    value = spark.conf.get(_SHUFFLES)
    return int(value) if value and value.isdigit() else 0


def read_window(
    source: WitnessSource, name: str, numbers: Numbers, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` task that reads relation ``name`` of the listed (feed, hour) rows from
    the state store, each row tagged with its feed and hour, its block or leaf path by number
    (rows of the others left out); hours without witnesses give none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = arrow_schema(pa, RELATIONS[name])
    column = _NUMBERED[name]
    known = pa.array(numbers.of_relation(name), pa.string())
    store = source.stores.open(source.state_uri)
    for batch in batches:
        for feed, hour_s in zip(
            batch.column("feed").to_pylist(), batch.column("hour_s").to_pylist(), strict=True
        ):
            when = datetime.fromtimestamp(hour_s, timezone.utc)
            read = partial(read_relation, store, feed, when, name, source.filing)
            table = still_there(read, feed, when, source.required)
            if table is None or not table.num_rows:
                continue
            codes = pc.index_in(table.column(column), value_set=known)
            table = table.set_column(table.schema.get_field_index(column), column, codes)
            table = table.filter(pc.is_valid(codes))
            rows = table.num_rows
            tagged = table.append_column("feed", pa.array([feed] * rows, pa.string()))
            tagged = tagged.append_column("hour_s", pa.array([hour_s] * rows, pa.int64()))
            yield from tagged.select(schema.names).cast(schema).to_batches(max_chunksize=_BATCH_ROWS)


def matched_sql(edges: str, vals: str, hour_s: int) -> str:
    """The value semi-join of the two sides' values of each subscription's driving join (R_T's
    ``dl``/``dr``: its most selective value join in this hour), paper 001's first step: once per
    pair of leaf paths of every template (``edges``; never once per subscription: 100,000 rules over
    one pair of paths match their values once), sliced by the hour: this hour's left values
    against the window's right values, then the earlier hours' left values against this hour's
    right ones (never the window against itself)."""
    # subqueries, no WITH, here and in paired_sql: Spark does not find a cached query's rows when
    # the query has a CTE and the query reading its view has one too (measured: pairs_sql computed
    # the pairs again on every read, three quarters of a stage's time)
    return (
        f"{_matched(edges, vals, f'a.hour_s = {hour_s}')}\n"
        f"  UNION ALL {_matched(edges, vals, f'a.hour_s < {hour_s} AND b.hour_s = {hour_s}')}"
    )


def paired_sql(views: Mapping[str, str]) -> str:
    """The node pairs of one template's subscriptions delivered in the hour, before their
    subscriptions are known: the ``matched`` pairs of its driving joins' leaf paths, each node with
    its set of the template's blocks that bound it (on its side) and its event time (only the
    matched nodes' bindings are gathered)."""
    rt, roots, matched = views["rt"], views["roots"], views["matched"]
    return "\n".join(
        [
            "SELECT m.*, L.blocks AS lset, R.blocks AS rset, L.time_us AS l_time, R.time_us AS r_time",
            f"FROM {matched} m LEFT SEMI JOIN (SELECT DISTINCT lfeed, rfeed, dl, dr FROM {rt}) e",
            "  ON e.lfeed = m.lfeed AND e.rfeed = m.rfeed AND e.dl = m.lpath AND e.dr = m.rpath",
            f"JOIN ({_block_sets(roots, rt, matched, 'l')}) L",
            f"  ON L.feed = m.lfeed AND {_same_node('L', *_side('m', 'l'))}",
            f"JOIN ({_block_sets(roots, rt, matched, 'r')}) R",
            f"  ON R.feed = m.rfeed AND {_same_node('R', *_side('m', 'r'))}",
        ]
    )


def pairs_sql(template: Template, views: Mapping[str, str], spread: int = 0) -> str:
    """Each subscription's pairs among the template's ``paired`` nodes: the subscriptions of each
    combination of two block sets some pair has (left block in the one, right block in the
    other), found once per combination as the in-process stage does, not once per pair and block;
    then every value join of the template checked on the two nodes' values (XQuery's general
    comparison: some value equal), and the temporal term. Each (subscription, pair) comes once: a
    subscription has one driving join and one block per side.

    The value joins are checked against each node pair's *matching leaves*: the pairs of its two
    nodes' leaf paths that share a value, found once per pair by joining the two nodes' values (a
    few rows each), so that a pair many subscriptions share is not compared once per subscription
    and no node's values are gathered that no pair needs.

    ``spread``: how many partitions the routes are found in (0: as Spark sees fit)."""
    rt, paired, vals = views["rt"], views["paired"], views["vals"]
    several = len(template.value_edges) > 1
    lines = [
        "WITH combos AS (",
        # numbered in a fixed order: the number is the same wherever the CTE is evaluated
        f"  SELECT *, row_number() OVER (ORDER BY {_COMBO}) AS cid",
        f"  FROM (SELECT DISTINCT {_COMBO} FROM {paired})",
        "), routes AS (",
        "  SELECT c.cid, rt.*",
        # spread again: the numbering left the combinations in one partition, and a combination's
        # subscriptions (millions of rows in all) were then found by one task; a number of
        # partitions, as Spark would otherwise coalesce the few small rows into one again
        f"  FROM (SELECT /*+ REPARTITION({f'{spread}, ' if spread else ''}lb) */ combos.*, lb",
        "    FROM combos LATERAL VIEW explode(lset) sets AS lb) c",
        f"  JOIN {rt} rt ON rt.lfeed = c.lfeed AND rt.rfeed = c.rfeed AND rt.dl = c.lpath"
        " AND rt.dr = c.rpath AND rt.lblock = c.lb",
        "  WHERE array_contains(c.rset, rt.rblock)",
        "), numbered AS (",
        f"  SELECT p.*, c.cid{', e.matching' if several else ''} FROM {paired} p JOIN combos c ON "
        + " AND ".join(f"c.{column} = p.{column}" for column in _COMBO.split(", ")),
    ]
    if several:
        lines += [f"  LEFT JOIN ({_matching(paired, vals)}) e ON {_same_pair('e', 'p')}"]
    lines += [
        ")",
        "SELECT rt.sid, p.l_hour, p.l_message, p.l_node, p.r_hour, p.r_message, p.r_node",
        "FROM numbered p JOIN routes rt ON rt.cid = p.cid",
        f"WHERE {_temporal()}",
    ]
    if several:
        # each general comparison on its own: a leaf compared twice may match each time with a
        # different one of its values (the driving one holds already; checking it again is cheap)
        lines += [
            f"  AND array_contains(p.matching, named_struct('l', rt.p_{left}, 'r', rt.p_{right}))"
            for left, right in template.value_edges
        ]
    return "\n".join(lines)


def _matching(paired: str, vals: str) -> str:
    """Each node pair's matching leaves: every (left leaf path, right leaf path) whose values share
    one (XQuery's general comparison of the two leaves holds)."""
    pair = "p.lfeed, p.rfeed, p.l_hour, p.l_message, p.l_node, p.r_hour, p.r_message, p.r_node"
    return "\n".join(
        [
            f"SELECT {pair}, collect_set(named_struct('l', a.leaf, 'r', b.leaf)) AS matching",
            f"  FROM (SELECT DISTINCT {pair} FROM {paired} p) p",
            f"  JOIN {vals} a ON a.feed = p.lfeed AND {_same_node('a', *_side('p', 'l'))}",
            f"  JOIN {vals} b ON b.feed = p.rfeed AND {_same_node('b', *_side('p', 'r'))}"
            " AND b.value = a.value",
            f"  GROUP BY {pair}",
        ]
    )


def _same_pair(alias: str, other: str) -> str:
    """``alias``'s row is of the node pair of ``other``'s."""
    columns = ("lfeed", "rfeed", *_PAIR_COLUMNS)
    return " AND ".join(f"{alias}.{column} = {other}.{column}" for column in columns)


#: What a combination of a matched pair is: its slice (feeds, driving leaf paths) and its two nodes'
#: block sets.
_COMBO = "lfeed, rfeed, lpath, rpath, lset, rset"


def _matched(edges: str, vals: str, where: str) -> str:
    """The node pairs of the edges' leaf paths sharing a value (``a`` left, ``b`` right), each once."""
    return "\n".join(
        [
            "",
            "  SELECT DISTINCT e.lfeed, e.rfeed, e.lpath, e.rpath,",
            "    a.hour_s AS l_hour, a.message AS l_message, a.node AS l_node,",
            "    b.hour_s AS r_hour, b.message AS r_message, b.node AS r_node",
            f"  FROM {edges} e JOIN {vals} a ON a.feed = e.lfeed AND a.leaf = e.lpath",
            f"  JOIN {vals} b ON b.feed = e.rfeed AND b.leaf = e.rpath AND b.value = a.value",
            f"  WHERE {where}",
        ]
    )


def _block_sets(roots: str, rt: str, matched: str, side: str) -> str:
    """Each matched node's sorted set of one side's (``l`` or ``r``) blocks that bound it, with its
    message's event time."""
    nodes = f"SELECT DISTINCT {side}feed AS feed, {', '.join(_side('', side))} FROM {matched}"
    return (
        "SELECT r.feed, r.hour_s, r.message, r.node, first(r.time_us) AS time_us,"
        " array_sort(collect_set(r.block)) AS blocks"
        f" FROM {roots} r LEFT SEMI JOIN (SELECT DISTINCT {side}feed, {side}block FROM {rt}) k"
        f" ON r.feed = k.{side}feed AND r.block = k.{side}block"
        f" LEFT SEMI JOIN ({nodes}) n ON n.feed = r.feed AND {_same_node('n', *_of('r'))}"
        " GROUP BY r.feed, r.hour_s, r.message, r.node"
    )


def capped(query: str, most: int) -> str:
    """``query``'s first ``most`` pairs of each subscription, in XQuery's order (a low-cardinality
    join may have 10⁸ pairs: the driver never collects them)."""
    order = "l_hour, l_message, l_node, r_hour, r_message, r_node"
    numbered = f"SELECT q.*, row_number() OVER (PARTITION BY sid ORDER BY {order}) AS n FROM ({query}) q"
    return f"SELECT sid, {order} FROM ({numbered}) WHERE n <= {most}"


def _same_node(alias: str, hour: str, message: str, node: str) -> str:
    """``alias``'s row is of the node the three columns name."""
    return f"{alias}.hour_s = {hour} AND {alias}.message = {message} AND {alias}.node = {node}"


def _side(alias: str, side: str) -> tuple[str, str, str]:
    """The three columns of ``alias`` naming the node of one side (``l`` or ``r``) of a pair (no
    alias: the bare names, each the node's column of that name)."""
    if not alias:
        return (f"{side}_hour AS hour_s", f"{side}_message AS message", f"{side}_node AS node")
    return f"{alias}.{side}_hour", f"{alias}.{side}_message", f"{alias}.{side}_node"


def _of(alias: str) -> tuple[str, str, str]:
    """The three columns of ``alias`` naming its node."""
    return f"{alias}.hour_s", f"{alias}.message", f"{alias}.node"


def _temporal() -> str:
    """FOLLOWED BY: 0 < t(second) - t(first) <= window; JOIN (within): |t(R) - t(L)| <= window, two
    different messages. Times in microseconds."""
    gap = "(CASE WHEN rt.left_first THEN p.r_time - p.l_time ELSE p.l_time - p.r_time END)"
    same = "(rt.lfeed = rt.rfeed AND p.l_hour = p.r_hour AND p.l_message = p.r_message)"
    within = f"(abs(p.r_time - p.l_time) <= rt.window_us AND NOT {same})"
    return f"(CASE WHEN rt.within THEN {within} ELSE {gap} BETWEEN 1 AND rt.window_us END)"


class _Views:
    """The temporary views of one run (unique names: concurrent runs on one session never meet)."""

    def __init__(self, spark: SparkSession, tag: str, numbers: Numbers) -> None:
        self.spark = spark
        self.tag = tag
        self.numbers = numbers
        self.created: list[str] = []
        self.frames: list[DataFrame] = []

    def register(self, source: WitnessSource, hours: Sequence[tuple[str, int]]) -> None:
        """The window's relations as cached views, each (feed, hour) read by a task of its own."""
        # a task per (feed, hour), or per few of them on few cores: every later scan of the cached
        # views has as many tasks as they have partitions
        cores = executor_cores(self.spark)
        tasks = min(len(hours), 2 * cores) if cores else len(hours)
        listing = self.spark.createDataFrame(list(hours), LISTING).repartition(max(1, tasks))
        for name, view in (("roots", "roots"), ("values", "vals")):
            read = partial(read_window, source, name, self.numbers)
            self._cache(view, listing.mapInArrow(read, RELATIONS[name]))

    def _cache(self, name: str, frame: DataFrame) -> None:
        cached = frame.cache()
        self.frames.append(cached)
        self._frame(name, cached)

    def driving(self, plans: Sequence[JoinPlan], hour_s: int) -> Callable[[JoinPlan], tuple[str, str]]:
        """Each subscription's driving value join: the one with the fewest matches among this
        hour's own nodes (as the in-process stage picks it; the first of equals). The choice is the
        work's, never the pairs': every value join is checked on every pair."""
        leaf = self.numbers.leaf
        candidates = sorted(
            {
                (*plan.feeds, leaf(left), leaf(right))
                for plan in plans
                if len(plan.joins) > 1
                for left, right in plan.joins
            }
        )
        counts: dict[tuple[object, ...], int] = {}
        if candidates:
            self._frame(
                "candidates",
                self.spark.createDataFrame(candidates, "lfeed string, rfeed string, lpath int, rpath int"),
            )
            vals = self._name("vals")
            query = (
                "SELECT e.lfeed, e.rfeed, e.lpath, e.rpath, count(*) AS n"
                f" FROM {self._name('candidates')} e"
                f" JOIN {vals} a ON a.feed = e.lfeed AND a.leaf = e.lpath AND a.hour_s = {hour_s}"
                f" JOIN {vals} b ON b.feed = e.rfeed AND b.leaf = e.rpath AND b.value = a.value"
                f" AND b.hour_s = {hour_s}"
                " GROUP BY e.lfeed, e.rfeed, e.lpath, e.rpath"
            )
            counts = {tuple(row[:4]): row[4] for row in self.spark.sql(query).collect()}

        def drive(plan: JoinPlan) -> tuple[str, str]:
            return min(plan.joins, key=lambda join: counts.get((*plan.feeds, *map(leaf, join)), 0))

        return drive

    def rt(
        self, template: Template, plans: Sequence[JoinPlan], driving: Callable[[JoinPlan], tuple[str, str]]
    ) -> str:
        import pyarrow as pa

        leaf, block = self.numbers.leaf, self.numbers.block
        rows = []
        for plan in plans:
            lpath, rpath = driving(plan)
            row = {
                "sid": plan.sid,
                "dl": leaf(lpath),
                "dr": leaf(rpath),
                "lblock": block(plan.blocks[0]),
                "rblock": block(plan.blocks[1]),
                "lfeed": plan.feeds[0],
                "rfeed": plan.feeds[1],
                "window_us": _micros(plan.window),
                "within": plan.kind is TemporalKind.WITHIN,
                "left_first": plan.left_first,
            }
            row |= {f"p_{var}": leaf(path) for var, path in _compared(plan).items()}
            rows.append(row)
        name = f"rt_{len(self.created)}"
        # checkpointed: as a local relation its rows were part of every plan that read it, and
        # analysing the template's queries took seconds (measured: 7 s of a stage)
        self._frame(name, self.spark.createDataFrame(pa.Table.from_pylist(rows)).localCheckpoint())
        return name

    @contextmanager
    def cached(self, name: str, query: str) -> Iterator[str]:
        """``query``'s rows as a cached view while the block runs (computed once however often the
        queries in it read them), dropped after."""
        frame = self.spark.sql(query).cache()
        try:
            frame.createOrReplaceTempView(self._name(name))
            yield self._name(name)
        finally:
            frame.unpersist()  # before its view goes, as in drop()
            self.spark.catalog.dropTempView(self._name(name))

    def names(self, rt: str | None = None) -> dict[str, str]:
        names = {name: self._name(name) for name in ("roots", "vals")}
        return names | ({"rt": self._name(rt)} if rt else {})

    def edges(self, rts: Iterable[str]) -> str:
        """The view of every driving pair of leaf paths of the ``rts`` tables, once each."""
        union = " UNION ".join(
            f"SELECT lfeed, rfeed, dl AS lpath, dr AS rpath FROM {self._name(rt)}" for rt in rts
        )
        self._frame("edges", self.spark.sql(union))
        return self._name("edges")

    def _frame(self, name: str, frame: DataFrame) -> None:
        frame.createOrReplaceTempView(self._name(name))
        self.created.append(self._name(name))

    def _name(self, name: str) -> str:
        return f"fr_{name}_{self.tag}"

    def __enter__(self) -> _Views:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def drop(self) -> None:
        # frames first: a Connect server analyses a frame's plan again to unpersist it, and the
        # plan of one made by SQL names the views
        for frame in reversed(self.frames):
            frame.unpersist()
        for name in self.created:
            self.spark.catalog.dropTempView(name)


def _collect(frame: DataFrame, found: dict[str, list[Pair]]) -> None:
    """Add the query's pairs to their subscriptions' lists (fetched as Arrow and grouped by pair
    there: millions of rows are columns until here, and a pair many subscriptions share is one
    object)."""
    table = frame.toArrow()
    grouped = table.group_by(list(_PAIR_COLUMNS), use_threads=False).aggregate([("sid", "list")])
    hours: dict[int, datetime] = {}
    columns = [grouped.column(name).to_pylist() for name in (*_PAIR_COLUMNS, "sid_list")]
    for l_hour, l_message, l_node, r_hour, r_message, r_node, sids in zip(*columns, strict=True):
        pair = ((_hour(l_hour, hours), l_message, l_node), (_hour(r_hour, hours), r_message, r_node))
        for sid in sids:
            found[sid].append(pair)


#: The columns of a pair, as the queries give them.
_PAIR_COLUMNS = ("l_hour", "l_message", "l_node", "r_hour", "r_message", "r_node")


def _hour(seconds: int, hours: dict[int, datetime]) -> datetime:
    found = hours.get(seconds)
    if found is None:
        found = hours[seconds] = datetime.fromtimestamp(seconds, timezone.utc)
    return found


def _by_template(plans: Iterable[JoinPlan]) -> dict[Template, list[JoinPlan]]:
    groups: dict[Template, list[JoinPlan]] = {}
    for plan in plans:
        groups.setdefault(plan.template, []).append(plan)
    return groups


def _seconds(when: datetime) -> int:
    return int((when - _EPOCH).total_seconds())


def _micros(delta: Any) -> int:
    return delta // _MICROSECOND


_MICROSECOND = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc) - _EPOCH
