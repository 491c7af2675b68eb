"""Stage 2 on Spark SQL: one relational conjunctive query per template (paper 001, §4.3-4.4).

The witness relations of the window's hours are read by the executors, straight from the state
store's Parquet (:func:`~feedrouter.spark.witnesses.read_relation`, one task per feed and hour;
nothing of them passes through the driver), and become two cached views: ``roots`` (paper 001's
R_bin reduced to the bound node, with its message's event time: R_docTS) and ``vals`` (R_doc: leaf
path and string value per bound node). Every join subscription is one row of its template's R_T
table: its blocks and feeds, the path each leaf metavariable stands for, its window and temporal
kind. One query per template (:func:`template_sql`) joins R_T with the views, in paper 001's
order: the value semi-join of the hour's slice with the window first, then the subscriptions the
matched nodes' block sets serve, the other value joins, the temporal term; ``DISTINCT`` pairs, as
XQuery's ``for`` gives each pair of nodes once.

The pairs (at most the cap + 1 of a subscription) come back to the driver as Arrow, which
assembles and delivers them like the in-process engine
(:meth:`~feedrouter.join.stage.JoinStage.deliver`): both engines give the same pairs (tests run
them side by side).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from feedrouter.join.plan import JoinPlan
from feedrouter.join.relations import ONE_HOUR
from feedrouter.join.stage import DEFAULT_MAX_PAIRS, Pair
from feedrouter.join.templates import Template
from feedrouter.lang.ast import TemporalKind
from feedrouter.spark.frames import arrow_schema
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import read_relation

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The relations' columns as the views hold them (Spark DDL).
LISTING = "feed string, hour_s bigint"
RELATIONS = {
    "roots": "feed string, hour_s bigint, message int, node int, block string, time_us bigint",
    "values": "feed string, hour_s bigint, message int, node int, leaf string, value string",
}
#: Rows per Arrow batch a reading task yields.
_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class WitnessSource:
    """Where the executors read witness hours: the state store's URI and the opener that opens it
    in every process (picklable: it travels with the tasks; credentials stay hidden)."""

    stores: StoreOpener
    state_uri: str


def spark_pairs(
    spark: SparkSession,
    plans: Sequence[JoinPlan],
    hour: datetime,
    source: WitnessSource,
    lateness: Any,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> dict[str, list[Pair]]:
    """Every subscription's qualifying pairs delivered in ``hour``, computed on ``spark``; at most
    ``max_pairs + 1`` of a subscription (past its cap it is withheld: never more are collected)."""
    if not plans:
        return {}
    back = max(plan.reach(lateness) for plan in plans)
    hours = [hour - ONE_HOUR * k for k in range(back, -1, -1)]
    feeds = sorted({feed for plan in plans for feed in plan.feeds})
    views = _Views(spark, uuid.uuid4().hex[:12])
    found: dict[str, list[Pair]] = {plan.sid: [] for plan in plans}
    try:
        views.register(source, [(feed, _seconds(when)) for feed in feeds for when in hours])
        for template, group in _by_template(plans).items():
            rt = views.rt(template, group)
            query = capped(template_sql(template, views.names(rt), _seconds(hour)), max_pairs + 1)
            _collect(spark.sql(query), found)
    finally:
        views.drop()
    return {sid: sorted(pairs) for sid, pairs in found.items()}


def read_window(
    source: WitnessSource, name: str, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` task that reads relation ``name`` of the listed (feed, hour) rows from
    the state store, each row tagged with its feed and hour; hours without witnesses give none."""
    import pyarrow as pa

    schema = arrow_schema(pa, RELATIONS[name])
    store = source.stores.open(source.state_uri)
    for batch in batches:
        for feed, hour_s in zip(
            batch.column("feed").to_pylist(), batch.column("hour_s").to_pylist(), strict=True
        ):
            table = read_relation(store, feed, datetime.fromtimestamp(hour_s, timezone.utc), name)
            if table is None or not table.num_rows:
                continue
            rows = table.num_rows
            tagged = table.append_column("feed", pa.array([feed] * rows, pa.string()))
            tagged = tagged.append_column("hour_s", pa.array([hour_s] * rows, pa.int64()))
            yield from tagged.select(schema.names).cast(schema).to_batches(max_chunksize=_BATCH_ROWS)


def template_sql(template: Template, views: Mapping[str, str], hour_s: int) -> str:
    """The conjunctive query of one template over its R_T view and the witness views, in paper
    001's order:

    1. ``matched``: the value semi-join of the two sides' leaf values, once per pair of leaf paths
       some subscription compares (never once per subscription: 100,000 rules over one pair of
       paths match their values once), sliced by the hour: this hour's left values against the
       window's right values, then the earlier hours' left values against this hour's right ones
       (never the window against itself);
    2. ``lnodes``/``rnodes``: each node's set of the template's blocks that bound it, with its
       event time; ``routes``: each combination of two such sets that a matched pair has, with the
       subscriptions it serves (their left block in the one, right block in the other), found once
       per combination, as the in-process stage does, instead of once per pair and block;
    3. the pairs with their subscriptions, the other value joins, the temporal term.
    """
    (first_left, first_right), others = template.value_edges[0], template.value_edges[1:]
    rt, roots, vals = views["rt"], views["roots"], views["vals"]
    lines = [
        "WITH edges AS (",
        f"  SELECT DISTINCT lfeed, rfeed, p_{first_left} AS lpath, p_{first_right} AS rpath FROM {rt}",
        f"), matched AS ({_matched(vals, f'a.hour_s = {hour_s}')}",
        f"  UNION ALL {_matched(vals, f'a.hour_s < {hour_s} AND b.hour_s = {hour_s}')}",
        f"), lnodes AS ({_block_sets(roots, rt, 'lfeed', 'lblock')}",
        f"), rnodes AS ({_block_sets(roots, rt, 'rfeed', 'rblock')}",
        "), paired AS (",
        "  SELECT m.*, L.blocks AS lset, R.blocks AS rset, L.time_us AS l_time, R.time_us AS r_time",
        "  FROM matched m",
        f"  JOIN lnodes L ON L.feed = m.lfeed AND {_same_node('L', *_side('m', 'l'))}",
        f"  JOIN rnodes R ON R.feed = m.rfeed AND {_same_node('R', *_side('m', 'r'))}",
        "), combos AS (",
        "  SELECT DISTINCT lfeed, rfeed, lpath, rpath, lset, rset FROM paired",
        "), routes AS (",
        "  SELECT c.lset, c.rset, rt.*",
        "  FROM (SELECT combos.*, lb FROM combos LATERAL VIEW explode(lset) sets AS lb) c",
        f"  JOIN {rt} rt ON rt.lfeed = c.lfeed AND rt.rfeed = c.rfeed AND rt.p_{first_left} = c.lpath"
        f" AND rt.p_{first_right} = c.rpath AND rt.lblock = c.lb",
        "  WHERE array_contains(c.rset, rt.rblock)",
        ")",
        "SELECT DISTINCT rt.sid, p.l_hour, p.l_message, p.l_node, p.r_hour, p.r_message, p.r_node",
        "FROM paired p",
        "JOIN routes rt ON rt.lfeed = p.lfeed AND rt.rfeed = p.rfeed"
        f" AND rt.p_{first_left} = p.lpath AND rt.p_{first_right} = p.rpath"
        " AND rt.lset = p.lset AND rt.rset = p.rset",
    ]
    # each other value join on its own aliases: XQuery's general comparisons are each existential
    # (a leaf compared twice may match each time with a different one of its values)
    for number, (left, right) in enumerate(others, start=1):
        ours, theirs = f"x{number}", f"y{number}"
        lines.append(
            f"JOIN {vals} {ours} ON {ours}.feed = rt.lfeed AND {ours}.leaf = rt.p_{left}"
            f" AND {_same_node(ours, *_side('p', 'l'))}"
        )
        lines.append(
            f"JOIN {vals} {theirs} ON {theirs}.feed = rt.rfeed AND {theirs}.leaf = rt.p_{right}"
            f" AND {_same_node(theirs, *_side('p', 'r'))} AND {theirs}.value = {ours}.value"
        )
    lines.append(f"WHERE {_temporal()}")
    return "\n".join(lines)


def _matched(vals: str, where: str) -> str:
    """The node pairs of the edges' leaf paths sharing a value (``a`` left, ``b`` right), each once."""
    return "\n".join(
        [
            "",
            "  SELECT DISTINCT e.lfeed, e.rfeed, e.lpath, e.rpath,",
            "    a.hour_s AS l_hour, a.message AS l_message, a.node AS l_node,",
            "    b.hour_s AS r_hour, b.message AS r_message, b.node AS r_node",
            f"  FROM edges e JOIN {vals} a ON a.feed = e.lfeed AND a.leaf = e.lpath",
            f"  JOIN {vals} b ON b.feed = e.rfeed AND b.leaf = e.rpath AND b.value = a.value",
            f"  WHERE {where}",
        ]
    )


def _block_sets(roots: str, rt: str, feed: str, block: str) -> str:
    """Each node's set of the blocks one side of the template's subscriptions binds (sorted: equal
    sets are equal arrays), with its message's event time; a node's other blocks serve none."""
    return (
        "\n  SELECT r.feed, r.hour_s, r.message, r.node, first(r.time_us) AS time_us,"
        " array_sort(collect_set(r.block)) AS blocks"
        f"\n  FROM {roots} r LEFT SEMI JOIN (SELECT DISTINCT {feed}, {block} FROM {rt}) k"
        f" ON r.feed = k.{feed} AND r.block = k.{block}"
        "\n  GROUP BY r.feed, r.hour_s, r.message, r.node"
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
    """The three columns of ``alias`` naming the node of one side (``l`` or ``r``) of a pair."""
    return f"{alias}.{side}_hour", f"{alias}.{side}_message", f"{alias}.{side}_node"


def _temporal() -> str:
    """FOLLOWED BY: 0 < t(second) - t(first) <= window; JOIN (within): |t(R) - t(L)| <= window, two
    different messages. Times in microseconds."""
    gap = "(CASE WHEN rt.left_first THEN p.r_time - p.l_time ELSE p.l_time - p.r_time END)"
    same = "(rt.lfeed = rt.rfeed AND p.l_hour = p.r_hour AND p.l_message = p.r_message)"
    within = f"(abs(p.r_time - p.l_time) <= rt.window_us AND NOT {same})"
    return f"(CASE WHEN rt.within THEN {within} ELSE {gap} BETWEEN 1 AND rt.window_us END)"


class _Views:
    """The temporary views of one run (unique names: concurrent runs on one session never meet)."""

    def __init__(self, spark: SparkSession, tag: str) -> None:
        self.spark = spark
        self.tag = tag
        self.created: list[str] = []
        self.cached: list[DataFrame] = []

    def register(self, source: WitnessSource, hours: Sequence[tuple[str, int]]) -> None:
        """The window's relations as cached views, each (feed, hour) read by a task of its own."""
        listing = self.spark.createDataFrame(list(hours), LISTING).repartition(max(1, len(hours)))
        for name, view in (("roots", "roots"), ("values", "vals")):
            frame = listing.mapInArrow(partial(read_window, source, name), RELATIONS[name]).cache()
            self.cached.append(frame)
            self._frame(view, frame)

    def rt(self, template: Template, plans: Sequence[JoinPlan]) -> str:
        import pyarrow as pa

        joined = set(itertools.chain.from_iterable(template.value_edges))
        rows = []
        for plan in plans:
            paths = template.paths(plan.bindings)
            row = {
                "sid": plan.sid,
                "lblock": plan.blocks[0],
                "rblock": plan.blocks[1],
                "lfeed": plan.feeds[0],
                "rfeed": plan.feeds[1],
                "window_us": _micros(plan.window),
                "within": plan.kind is TemporalKind.WITHIN,
                "left_first": plan.left_first,
            }
            row |= {f"p_{var}": paths[var] for var in template.variables if var in joined}
            rows.append(row)
        name = f"rt_{len(self.created)}"
        self._frame(name, self.spark.createDataFrame(pa.Table.from_pylist(rows)))
        return name

    def names(self, rt: str) -> dict[str, str]:
        return {"rt": self._name(rt), "roots": self._name("roots"), "vals": self._name("vals")}

    def _frame(self, name: str, frame: DataFrame) -> None:
        frame.createOrReplaceTempView(self._name(name))
        self.created.append(self._name(name))

    def _name(self, name: str) -> str:
        return f"fr_{name}_{self.tag}"

    def drop(self) -> None:
        for name in self.created:
            self.spark.catalog.dropTempView(name)
        for frame in self.cached:
            frame.unpersist()


def _collect(frame: DataFrame, found: dict[str, list[Pair]]) -> None:
    """Add the query's pairs to their subscriptions' lists (fetched as Arrow: millions of pairs are
    columns, not Python rows, until here)."""
    table = frame.toArrow()
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    hours: dict[int, datetime] = {}
    for sid, *pair in zip(
        columns["sid"],
        columns["l_hour"],
        columns["l_message"],
        columns["l_node"],
        columns["r_hour"],
        columns["r_message"],
        columns["r_node"],
        strict=True,
    ):
        left = (_hour(pair[0], hours), pair[1], pair[2])
        right = (_hour(pair[3], hours), pair[4], pair[5])
        found[sid].append((left, right))


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
