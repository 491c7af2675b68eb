"""Stage 2 on Spark SQL: one relational conjunctive query per template (paper 001, §4.3-4.4).

The witness relations of the window's hours become two views, ``roots`` (paper 001's R_bin
reduced to the bound node, with its message's event time: R_docTS) and ``vals`` (R_doc: leaf
path and string value per bound node). Every join subscription is one row of its template's R_T
table: its blocks and feeds, the path each leaf metavariable stands for, its window and temporal
kind. One query per template joins R_T with the views: the value edges first (a value semi-join of
the two sides' leaf values, Algorithm 4), then the anchors (the bound nodes of the subscription's
blocks, one of them from this hour), the other leaves, the temporal term; ``DISTINCT`` pairs, as
XQuery's ``for`` gives each pair of nodes once.

The pairs come back to the driver, which assembles and delivers them like the in-process engine
(:meth:`~feedrouter.join.stage.JoinStage.deliver`): both engines give the same pairs (a test runs
them side by side).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from feedrouter.join.plan import JoinPlan
from feedrouter.join.relations import ONE_HOUR, HourWitnesses
from feedrouter.join.stage import DEFAULT_MAX_PAIRS, NodeRef, Pair, WitnessStore
from feedrouter.join.templates import Template
from feedrouter.lang.ast import TemporalKind

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def spark_pairs(
    spark: SparkSession,
    plans: Sequence[JoinPlan],
    hour: datetime,
    store: WitnessStore,
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
    loaded = [(feed, when, store(feed, when)) for feed in feeds for when in hours]
    views = _Views(spark, uuid.uuid4().hex[:12])
    views.register([(f, w, hw) for f, w, hw in loaded if hw is not None])
    found: dict[str, list[Pair]] = {plan.sid: [] for plan in plans}
    try:
        for template, group in _by_template(plans).items():
            rt = views.rt(template, group)
            query = capped(template_sql(template, views.names(rt), _seconds(hour)), max_pairs + 1)
            for row in spark.sql(query).collect():
                found[row["sid"]].append((_node(row, "l"), _node(row, "r")))
    finally:
        views.drop()
    return {sid: sorted(pairs) for sid, pairs in found.items()}


def template_sql(template: Template, views: Mapping[str, str], hour_s: int) -> str:
    """The conjunctive query of one template over its R_T view and the witness views, in paper
    001's order: the value semi-join of the two sides' leaf values first, once per pair of leaf
    paths some subscription compares (never once per subscription: 100,000 rules over one pair of
    paths match their values once), then the blocks that bound each matched node (each side
    narrowed to the template's blocks first), the subscriptions of those blocks and paths (R_T),
    the other value joins, the temporal term."""
    (first_left, first_right), others = template.value_edges[0], template.value_edges[1:]
    rt, roots, vals = views["rt"], views["roots"], views["vals"]
    lines = [
        "WITH edges AS (",
        f"  SELECT DISTINCT lfeed, rfeed, p_{first_left} AS lpath, p_{first_right} AS rpath FROM {rt}",
        "), matched AS (",
        "  SELECT DISTINCT e.lfeed, e.rfeed, e.lpath, e.rpath,",
        "    a.hour_s AS l_hour, a.message AS l_message, a.node AS l_node,",
        "    b.hour_s AS r_hour, b.message AS r_message, b.node AS r_node",
        f"  FROM edges e JOIN {vals} a ON a.feed = e.lfeed AND a.leaf = e.lpath",
        f"  JOIN {vals} b ON b.feed = e.rfeed AND b.leaf = e.rpath AND b.value = a.value",
        f"  WHERE a.hour_s = {hour_s} OR b.hour_s = {hour_s}",
        f"), lroots AS ({_narrowed(roots, rt, 'lfeed', 'lblock')}",
        f"), rroots AS ({_narrowed(roots, rt, 'rfeed', 'rblock')}",
        ")",
        "SELECT DISTINCT rt.sid, m.l_hour, m.l_message, m.l_node, m.r_hour, m.r_message, m.r_node",
        "FROM matched m",
        f"JOIN lroots L ON L.feed = m.lfeed AND {_same_node('L', 'm.l_hour', 'm.l_message', 'm.l_node')}",
        f"JOIN rroots R ON R.feed = m.rfeed AND {_same_node('R', 'm.r_hour', 'm.r_message', 'm.r_node')}",
        f"JOIN {rt} rt ON rt.lfeed = m.lfeed AND rt.rfeed = m.rfeed AND rt.p_{first_left} = m.lpath"
        f" AND rt.p_{first_right} = m.rpath AND rt.lblock = L.block AND rt.rblock = R.block",
    ]
    # each other value join on its own aliases: XQuery's general comparisons are each existential
    # (a leaf compared twice may match each time with a different one of its values)
    for number, (left, right) in enumerate(others, start=1):
        ours, theirs = f"x{number}", f"y{number}"
        lines.append(
            f"JOIN {vals} {ours} ON {ours}.feed = rt.lfeed AND {ours}.leaf = rt.p_{left}"
            f" AND {_same_node(ours, *_of('L'))}"
        )
        lines.append(
            f"JOIN {vals} {theirs} ON {theirs}.feed = rt.rfeed AND {theirs}.leaf = rt.p_{right}"
            f" AND {_same_node(theirs, *_of('R'))} AND {theirs}.value = {ours}.value"
        )
    lines.append(f"WHERE {_temporal()}")
    return "\n".join(lines)


def _narrowed(roots: str, rt: str, feed: str, block: str) -> str:
    """The roots of the blocks one side of the template's subscriptions binds (a node's other
    blocks serve none of them)."""
    return (
        f"SELECT r.* FROM {roots} r LEFT SEMI JOIN (SELECT DISTINCT {feed}, {block} FROM {rt}) k"
        f" ON r.feed = k.{feed} AND r.block = k.{block}"
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


def _of(alias: str) -> tuple[str, str, str]:
    return f"{alias}.hour_s", f"{alias}.message", f"{alias}.node"


def _temporal() -> str:
    """FOLLOWED BY: 0 < t(second) - t(first) <= window; JOIN (within): |t(R) - t(L)| <= window, two
    different messages. Times in microseconds."""
    gap = "(CASE WHEN rt.left_first THEN R.time_us - L.time_us ELSE L.time_us - R.time_us END)"
    same = "(rt.lfeed = rt.rfeed AND L.hour_s = R.hour_s AND L.message = R.message)"
    within = f"(abs(R.time_us - L.time_us) <= rt.window_us AND NOT {same})"
    return f"(CASE WHEN rt.within THEN {within} ELSE {gap} BETWEEN 1 AND rt.window_us END)"


class _Views:
    """The temporary views of one run (unique names: concurrent runs on one session never meet)."""

    def __init__(self, spark: SparkSession, tag: str) -> None:
        self.spark = spark
        self.tag = tag
        self.created: list[str] = []

    def register(self, hours: Iterable[tuple[str, datetime, HourWitnesses]]) -> None:
        import pyarrow as pa

        roots: list[dict[str, Any]] = []
        vals: list[dict[str, Any]] = []
        for feed, when, witnesses in hours:
            _rows_of(feed, when, witnesses, roots, vals)
        self._view("roots", pa.Table.from_pylist(roots, schema=_roots_schema(pa)))
        self._view("vals", pa.Table.from_pylist(vals, schema=_vals_schema(pa)))

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
        self._view(name, pa.Table.from_pylist(rows))
        return name

    def names(self, rt: str) -> dict[str, str]:
        return {"rt": self._name(rt), "roots": self._name("roots"), "vals": self._name("vals")}

    def _view(self, name: str, table: pa.Table) -> None:
        frame = self.spark.createDataFrame(table)
        frame.createOrReplaceTempView(self._name(name))
        self.created.append(self._name(name))

    def _name(self, name: str) -> str:
        return f"fr_{name}_{self.tag}"

    def drop(self) -> None:
        for name in self.created:
            self.spark.catalog.dropTempView(name)


def _rows_of(
    feed: str,
    when: datetime,
    witnesses: HourWitnesses,
    roots: list[dict[str, Any]],
    vals: list[dict[str, Any]],
) -> None:
    hour_s = _seconds(when)
    for block, nodes in witnesses.roots.items():
        for message, node in nodes:
            time = witnesses.messages[message].time
            if time is not None:  # a message without a usable event time takes part in no join
                roots.append(
                    {
                        "feed": feed,
                        "hour_s": hour_s,
                        "message": message,
                        "node": node,
                        "block": block,
                        "time_us": _micros(time - _EPOCH),
                    }
                )
    for (message, node), leaves in witnesses.values.items():
        for leaf, values in leaves.items():
            for value in dict.fromkeys(values):
                vals.append(
                    {
                        "feed": feed,
                        "hour_s": hour_s,
                        "message": message,
                        "node": node,
                        "leaf": leaf,
                        "value": value,
                    }
                )


def _roots_schema(pa: Any) -> pa.Schema:
    return pa.schema(
        [
            ("feed", pa.string()),
            ("hour_s", pa.int64()),
            ("message", pa.int32()),
            ("node", pa.int32()),
            ("block", pa.string()),
            ("time_us", pa.int64()),
        ]
    )


def _vals_schema(pa: Any) -> pa.Schema:
    return pa.schema(
        [
            ("feed", pa.string()),
            ("hour_s", pa.int64()),
            ("message", pa.int32()),
            ("node", pa.int32()),
            ("leaf", pa.string()),
            ("value", pa.string()),
        ]
    )


def _by_template(plans: Iterable[JoinPlan]) -> dict[Template, list[JoinPlan]]:
    groups: dict[Template, list[JoinPlan]] = {}
    for plan in plans:
        groups.setdefault(plan.template, []).append(plan)
    return groups


def _node(row: Any, side: str) -> NodeRef:
    hour = datetime.fromtimestamp(row[f"{side}_hour"], timezone.utc)
    return (hour, row[f"{side}_message"], row[f"{side}_node"])


def _seconds(when: datetime) -> int:
    return int((when - _EPOCH).total_seconds())


def _micros(delta: Any) -> int:
    return delta // _MICROSECOND


_MICROSECOND = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc) - _EPOCH
