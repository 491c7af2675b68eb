"""The witness store: one feed's hour of witness relations as Parquet files in an object store.

Stage 1 writes, under ``{state prefix}/witnesses/{feed}/dt=YYYY-MM-DD/hour=HH/``
(:func:`~feedrouter.delivery.layout.witness_dir`):

* ``messages.parquet``: ``(message, key, index, time)``, every message of the hour in stream
  order (``time`` null when the message takes part in no join);
* ``roots.parquet``: ``(block, message, node)``, the nodes each witness plan bound (format 2), or
  each join block (format 1: paper 001's R_bin, reduced to the bound node);
* ``values.parquet``: ``(leaf, value, message, node, count)``, each bound node's leaf values
  (R_doc; a leaf's values once each, ``count`` how many it has), sorted by leaf and value: the
  file's row groups are the value buckets of paper 001's view cache;
* ``fragments.parquet``: ``(message, node, fragment, data)``, the return fragments;
* ``blocks.json``: the blocks the hour's plan computed (sorted), each with the leaves and fragments
  its rows hold and (format 2) the witness plan it is filed from: a block the join stage needs and
  does not find here was not looked for, and the hour is back-filled for it;
* ``_SUCCESS`` last: an hour is readable once it is there (stage 2 and the Airflow sensors look for
  it, never for a join result).

In format 2 the join stage files the plans' roots by block as it reads the hour
(:func:`_filed_roots`, :class:`~feedrouter.join.filing.BlockFiling`): stage 1, in the pass that
routes every message, keeps each witness plan's rows whole. Hours of both formats are read.

Rows are sorted and the writer's options fixed, so a re-run of the hour writes identical bytes. A
message costs about 100 bytes in ``messages``, and each bound node 20 bytes per root, its leaf
values and its fragments' bytes (compressed): see the README's "State" section for sizing.

Retention (the ``feedrouter_retention`` DAG) lists a feed's hours (:func:`witness_hours`) and deletes
whole hours (:func:`delete_hour`), ``_SUCCESS`` first so that no reader takes a half-deleted hour for
a complete one.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from feedrouter.delivery.layout import SUCCESS, witness_dir
from feedrouter.delivery.parts import Provenance
from feedrouter.errors import FeedrouterError, ObjectNotFoundError, error
from feedrouter.hours import HOUR_PATH, HourError, format_hour, hour_path, parse_hour, to_hour
from feedrouter.join.filing import BlockFiling, LeafRows
from feedrouter.join.plan import BlockSpec, lookback
from feedrouter.join.relations import (
    NO_TIME,
    ONE_HOUR,
    HourWitnesses,
    JoinableColumns,
    MessageColumns,
    MessageRef,
    NamedColumns,
    PackedItems,
    RootColumns,
    Runs,
)
from feedrouter.join.selections import WitnessPlans, filed_from, rows_needed
from feedrouter.join.stage import NodeRef
from feedrouter.storage import ObjectStore
from feedrouter.storage.keys import join_key

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

T = TypeVar("T")

TABLES = ("messages", "roots", "values", "fragments")
#: What delivering an hour's pairs reads of a witness hour (provenance and fragments).
DELIVERY_TABLES = ("messages", "fragments")
#: Hours :meth:`WitnessHours.fence` reads at once (each a few object-store requests).
FENCE_THREADS = 8
#: The order delivering reads them in: the reverse of writing's (:func:`write_hour` writes the
#: messages first), so that fragments of a rewrite come with its messages, whose digest tells
#: them from the paired ones (:meth:`WitnessHours.read`).
_DELIVERY_ORDER = ("fragments", "messages")
BLOCKS = "blocks.json"
#: Rows per row group of the value table: a bucket of values read together.
VALUE_BUCKET_ROWS = 65_536
#: An hour's folder (``dt=YYYY-MM-DD/hour=HH``) at the start of a key below a feed's witnesses,
#: read from the layout's own template.
_HOUR_FOLDER = re.compile(
    re.escape(HOUR_PATH)
    .replace(re.escape("{date}"), r"(?P<date>\d{4}-\d{2}-\d{2})")
    .replace(re.escape("{hour}"), r"(?P<hour>\d{2})")
    + "/"
)


#: per block, the names of the leaves and fragments its rows hold (:class:`~feedrouter.join.plan.
#: BlockSpec`'s keys, stable across plan builds), as a job spec carries it
BlockCoverage = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
#: the same as an hour's ``blocks.json`` records it, by block
Coverage = dict[str, tuple[frozenset[str], frozenset[str]]]
#: per witness plan, the names of the leaves and fragments its rows hold (format 2), as a job spec
#: carries it
PlanCoverage = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]


def coverage(specs: Iterable[BlockSpec]) -> BlockCoverage:
    """What the rows of ``specs``' blocks hold, as :func:`write_hour` records it."""
    return tuple(
        sorted((spec.id, tuple(sorted(spec.leaves)), tuple(sorted(spec.fragments))) for spec in specs)
    )


def plan_coverage(plans: WitnessPlans) -> PlanCoverage:
    """What the rows of each of ``plans``' witness plans hold, as :func:`write_hour` records it."""
    return coverage(plans.bases.values())


class WrittenHour(Protocol):
    """An hour's witnesses as the writer reads them (:func:`write_hour`): messages filed one by one
    (:class:`~feedrouter.join.relations.HourWitnesses`) or a routing task's batches put together
    (:class:`~feedrouter.join.batches.BatchedHour`)."""

    feed: str
    hour: datetime
    blocks: tuple[str, ...]

    def message_columns(self) -> MessageColumns: ...

    def root_columns(self) -> RootColumns: ...

    def value_columns(self) -> NamedColumns: ...

    def fragment_columns(self) -> NamedColumns: ...


def write_hour(
    store: ObjectStore,
    witnesses: WrittenHour,
    covered: BlockCoverage = (),
    roots: Mapping[str, str] | None = None,
    plans: PlanCoverage = (),
) -> int:
    """Write one feed's hour of witnesses (then its ``_SUCCESS``); returns the bytes written.

    ``blocks.json`` records the blocks the hour's plan computed, each with the leaves and
    fragments its rows hold (``covered``: every block's; without it, the ids alone, as hours
    written before coverage was recorded have them). A block a later join reads with a leaf or
    fragment the hour does not hold is back-filled (:func:`~feedrouter.spark.joins.check_witnesses`).
    With ``roots`` (format 2: the roots are the witness plans' own, :meth:`~feedrouter.join.
    selections.WitnessPlans.collect`), each block also with the plan it is filed from, which the
    join stage files it by (:class:`~feedrouter.join.filing.BlockFiling`); with ``plans`` too,
    what each of those plans' rows hold, so that a block added later is filed from them where they
    hold what it needs, without routing the hour again (:func:`adopt_blocks`).
    """
    folder = witness_dir(witnesses.feed, witnesses.hour)
    tables = encode(witnesses)
    if store.exists(join_key(folder, SUCCESS)):
        # rewritten (a re-route, a back-fill): no reader takes it for whole while its tables change
        store.delete(join_key(folder, SUCCESS))
    for name, data in tables.items():
        store.put(join_key(folder, f"{name}.parquet"), data)
    blocks = json.dumps(_blocks_json(witnesses.blocks, covered, roots, plans), sort_keys=True).encode()
    store.put(join_key(folder, BLOCKS), blocks)
    store.put(join_key(folder, SUCCESS), b"")
    return sum(len(data) for data in tables.values()) + len(blocks)


def _blocks_json(
    blocks: Sequence[str], covered: BlockCoverage, roots: Mapping[str, str] | None, plans: PlanCoverage = ()
) -> list[str] | dict[str, Any]:
    if not covered:
        if roots is not None:
            raise ValueError("an hour of format 2 records its blocks' coverage")
        return sorted(blocks)
    if plans and roots is None:
        raise ValueError("an hour of format 1 has no witness plans' rows")
    shapes: dict[str, list[Any]] = {
        block: [list(leaves), list(fragments)] for block, leaves, fragments in covered
    }
    missing = sorted(set(blocks) - set(shapes))
    if missing:
        raise ValueError(f"no coverage for blocks {missing}")
    if roots is not None:
        unfiled = sorted(set(blocks) - set(roots))
        if unfiled:
            raise ValueError(f"no witness plan for blocks {unfiled}")
        entries = {block: [*shapes[block], roots[block]] for block in sorted(blocks)}
        return entries if not plans else _with_plans(entries, {p: (ls, fs) for p, ls, fs in plans})
    return {block: shapes[block] for block in sorted(blocks)}


def _with_plans(
    entries: dict[str, list[Any]], plans: Mapping[str, tuple[Collection[str], Collection[str]]]
) -> dict[str, Any]:
    """A ``blocks.json`` of format 2 that also records what each witness plan's rows hold, each
    distinct pair of leaves and fragments written once (``shapes``) and each plan once (``plans``),
    a block naming both by number: a feed's blocks are tens of thousands, their shapes and plans a
    few, and the join stage reads this of every hour of its window (30,738 blocks of the join
    bench's population C: 3.9 MB written out per block, a quarter of a second to parse)."""
    used = sorted({entry[2] for entry in entries.values()})
    unknown = [plan for plan in used if plan not in plans]
    if unknown:
        raise ValueError(f"no coverage for witness plans {unknown}")
    held = {plan: (tuple(sorted(plans[plan][0])), tuple(sorted(plans[plan][1]))) for plan in used}
    of_block = {block: (tuple(entry[0]), tuple(entry[1])) for block, entry in entries.items()}
    return _numbered_document(of_block, {block: entry[2] for block, entry in entries.items()}, held)


Shape = tuple[tuple[str, ...], tuple[str, ...]]


def _numbered_document(
    of_block: Mapping[str, Shape], roots: Mapping[str, str], held: Mapping[str, Shape]
) -> dict[str, Any]:
    """``blocks.json`` of format 2 with its shapes sorted and numbered, its plans sorted by id: per
    block its shape and plan (``roots``), per plan the shape its rows hold (``held``)."""
    shapes = sorted({*held.values(), *of_block.values()})
    shape_number = {shape: n for n, shape in enumerate(shapes)}
    names = sorted(held)
    plan_number = {plan: n for n, plan in enumerate(names)}
    return {
        "format": 2,
        "shapes": [[list(leaves), list(fragments)] for leaves, fragments in shapes],
        "plans": [[plan, shape_number[held[plan]]] for plan in names],
        "blocks": {
            block: [shape_number[shape], plan_number[roots[block]]] for block, shape in of_block.items()
        },
    }


def blocks_of_hour(store: ObjectStore, feed: str, hour: datetime) -> frozenset[str] | None:
    """The blocks an hour's witnesses cover, or None when the hour has none (yet)."""
    found = coverage_of_hour(store, feed, hour)
    return None if found is None else found[0]


def coverage_of_hour(
    store: ObjectStore, feed: str, hour: datetime
) -> tuple[frozenset[str], Coverage | None] | None:
    """The blocks an hour's witnesses cover and what their rows hold (None: an hour written before
    that was recorded), or None when the hour has none (yet)."""
    found = blocks_json_of_hour(store, feed, hour)
    return None if found is None else (frozenset(found.blocks), found.coverage)


def blocks_json_of_hour(store: ObjectStore, feed: str, hour: datetime) -> BlocksJson | None:
    """What an hour's ``blocks.json`` says, or None when the hour has no witnesses (yet)."""
    if not has_hour(store, feed, hour):
        return None
    return _read_blocks_json(feed, hour, store.get(join_key(witness_dir(feed, hour), BLOCKS)))


def holds(found: BlocksJson, specs: Collection[BlockSpec], wanted: BlockCoverage | None = None) -> bool:
    """Whether an hour (its ``blocks.json``) holds every block of ``specs`` with its leaves and
    fragments (``wanted``: those of them one subscription reads), each filed from a plan this
    code files it from (:func:`misfiled`)."""
    wanted = coverage(specs) if wanted is None else wanted
    return covers((frozenset(found.blocks), found.coverage), wanted) and not misfiled(found, specs)


def misfiled(found: BlocksJson, specs: Iterable[BlockSpec]) -> list[str]:
    """The blocks of ``specs`` an hour of format 2 files from a base witness plan this code does not
    file them from (:func:`~feedrouter.join.selections.filed_from`): the hour was written by code
    that factored them otherwise, and its plan's rows hold other nodes or lack leaves the tests
    read. Such an hour is back-filled as one that lacks the blocks."""
    roots = found.roots
    if roots is None:
        return []
    wrong = []
    for spec in specs:
        plan = roots.get(spec.id)
        if plan is not None and plan != spec.id and plan != filed_from(spec):
            wrong.append(spec.id)
    return wrong


def covers(found: tuple[frozenset[str], Coverage | None], wanted: BlockCoverage) -> bool:
    """Whether an hour's blocks and what their rows hold (:func:`coverage_of_hour`) include every
    block of ``wanted`` with its leaves and fragments (an hour written before coverage was
    recorded: taken to hold its blocks' all, as it was before)."""
    blocks, covered = found
    for block, leaves, fragments in wanted:
        if block not in blocks:
            return False
        if covered is not None:
            has_leaves, has_fragments = covered.get(block, (frozenset(), frozenset()))
            if not (has_leaves.issuperset(leaves) and has_fragments.issuperset(fragments)):
                return False
    return True


def has_hour(store: ObjectStore, feed: str, hour: datetime) -> bool:
    """Whether the hour's witnesses are complete in ``store``."""
    return store.exists(join_key(witness_dir(feed, hour), SUCCESS))


def read_hour(
    store: ObjectStore, feed: str, hour: datetime, tables: Sequence[str] = TABLES
) -> HourWitnesses | None:
    """The hour's witnesses, or None when stage 1 has not written them (yet); only ``tables`` of
    them (delivering pairs that another engine found needs ``messages`` and ``fragments`` only).
    The roots of an hour of format 2 are its witness plans', not its blocks': reading them here is
    refused (:func:`read_joinable` files them by block)."""
    read = _read_tables(store, feed, hour, tables)
    if read is None:
        return None
    data, blocks = read
    said = _read_blocks_json(feed, hour, blocks)
    if "roots" in data and said.roots is not None:
        raise ValueError(
            f"the roots of the join witnesses of {feed} {format_hour(hour)} are the witness plans' "
            "(format 2): read_joinable files them by the join's blocks"
        )
    found = decode(feed, hour, data)
    found.blocks = said.blocks
    return found


def _read_tables(
    store: ObjectStore, feed: str, hour: datetime, tables: Sequence[str]
) -> tuple[dict[str, bytes], bytes] | None:
    """The bytes of an hour's ``tables`` and of its ``blocks.json``, or None when it has none."""
    if not has_hour(store, feed, hour):
        return None
    folder = witness_dir(feed, hour)
    data = {name: store.get(join_key(folder, f"{name}.parquet")) for name in tables}
    return data, store.get(join_key(folder, BLOCKS))


def read_joinable(
    store: ObjectStore, feed: str, hour: datetime, filing: BlockFiling | None = None
) -> HourWitnesses | None:
    """The hour's witnesses as stage 2 pairs from them (:meth:`HourWitnesses.of_columns
    <feedrouter.join.relations.HourWitnesses.of_columns>`: event times, roots and values as
    columns, no Python object per row; no fragments), or None when stage 1 has not written them.
    An hour of format 2 is filed by the blocks of ``filing`` as it is read (:func:`_filed_roots`)."""
    read = _read_tables(store, feed, hour, list(_JOINABLE))
    return None if read is None else _joinable_hour(feed, hour, *read, filing)


def _joinable_hour(
    feed: str, hour: datetime, data: dict[str, bytes], blocks: bytes, filing: BlockFiling | None
) -> HourWitnesses:
    import pyarrow.parquet as pq

    said = _read_blocks_json(feed, hour, blocks)
    hour_roots = said.roots
    tables = {}
    for name, columns in _JOINABLE.items():
        wanted = [*columns, "count"] if name == "values" and hour_roots is not None else list(columns)
        with _readable(feed, hour, f"{name}.parquet"):
            tables[name] = pq.read_table(io.BytesIO(data[name]), columns=wanted)
    if hour_roots is not None:
        tables["roots"] = _filed_roots(feed, hour, tables, hour_roots, filing)
    with _readable(feed, hour, "the tables"):
        joinable = _joinable(tables)
    return HourWitnesses.of_columns(feed, hour, said.blocks, joinable)


def _filed_roots(
    feed: str,
    hour: datetime,
    tables: Mapping[str, pa.Table],
    hour_roots: Mapping[str, str],
    filing: BlockFiling | None,
) -> pa.Table:
    """The roots table of an hour of format 2 (the witness plans' roots) filed by the blocks of
    ``filing`` (:meth:`~feedrouter.join.filing.BlockFiling.file`): ``(block, message, node)``, as
    an hour of format 1 holds it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if filing is None:
        raise ValueError(
            f"the join witnesses of {feed} {format_hour(hour)} are filed by block as they are read "
            "(format 2): reading them needs the join's blocks"
        )
    with _readable(feed, hour, "roots.parquet and values.parquet"):
        roots, values = tables["roots"].combine_chunks(), tables["values"].combine_chunks()
        _complete(roots, "block", "message", "node")
        _complete(values, "leaf", "value", "message", "node", "count")

        def numbers(table: pa.Table, column: str) -> npt.NDArray[np.int64]:
            return table.column(column).to_numpy().astype(np.int64)

        def plan_roots(plan: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
            rows = roots.filter(pc.equal(roots.column("block"), plan))
            rows = rows.sort_by([("message", "ascending"), ("node", "ascending")])
            return (numbers(rows, "message"), numbers(rows, "node")) if rows.num_rows else None

        def leaf_rows(leaf: str) -> LeafRows | None:
            rows = values.filter(pc.equal(values.column("leaf"), leaf))
            if not rows.num_rows:
                return None
            found = [numbers(rows, column) for column in ("message", "node", "count")]
            return LeafRows(rows.column("value").to_pylist(), *found)

        filed = filing.file(hour_roots, plan_roots, leaf_rows)
    names = sorted(filed)
    sizes = [len(filed[name][0]) for name in names]
    at = np.repeat(np.arange(len(names), dtype=np.int64), sizes)
    messages, nodes = (
        np.concatenate([filed[name][side] for name in names]) if names else np.zeros(0, np.int64)
        for side in (0, 1)
    )
    return pa.table(
        {
            "block": pa.array(names, pa.string()).take(pa.array(at)),
            "message": pa.array(messages.astype(np.int32)),
            "node": pa.array(nodes.astype(np.int32)),
        }
    )


class WitnessHours:
    """The witness hours one run of the join stage reads from the state store, each read once: as
    stage 2 pairs from them (:meth:`joinable`), and with what delivering reads of them (the
    provenance and the fragments: :meth:`read`)."""

    def __init__(
        self,
        state: ObjectStore,
        required: Collection[tuple[str, datetime]] = (),
        filing: BlockFiling | None = None,
    ) -> None:
        self._state = state
        #: what files an hour of format 2 by block as it is read (the join's blocks)
        self._filing = filing
        #: the (feed, hour)s the run found written before it began (:func:`~feedrouter.spark.
        #: joins.check_witnesses`): one that is gone now is an error, not an hour without witnesses
        self._required = frozenset(required)
        self._hours: dict[tuple[str, datetime], HourWitnesses | None] = {}
        self._joinable: dict[tuple[str, datetime], HourWitnesses | None] = {}
        self._provenances: dict[tuple[str, datetime, int], Provenance] = {}
        #: the digest of each hour's messages as pairing read them: delivering from other ones
        #: (the hour rewritten meanwhile) would give pairs that are not pairs, or none at all
        self._paired: dict[tuple[str, datetime], str] = {}
        #: the messages whose fragments delivering needs, by hour (:meth:`expect`: an hour it does
        #: not name, none; None: all)
        self._wanted: dict[tuple[str, datetime], frozenset[int]] | None = None
        #: of each hour :meth:`read` read, its messages' references (those wanted) and their number
        self._messages: dict[tuple[str, datetime], tuple[dict[int, MessageRef], int]] = {}

    def expect(self, wanted: Mapping[tuple[str, datetime], Collection[int]]) -> None:
        """Read of those hours only the fragments of these messages: what the pairs to deliver
        need, not every block's fragments of every node of every hour the window reaches. Hours
        read before for other pairs (another part of a task's population) are read again."""
        self._wanted = {key: frozenset(messages) for key, messages in wanted.items()}
        self._hours.clear()

    def read(self, feed: str, hour: datetime) -> HourWitnesses | None:
        key = (feed, hour)
        if key not in self._hours:
            read = partial(self._read_delivered, feed, hour)
            self._hours[key] = still_there(read, feed, hour, self._required)
        return self._hours[key]

    def joinable(self, feed: str, hour: datetime) -> HourWitnesses | None:
        key = (feed, hour)
        if key not in self._joinable:
            read = partial(self._read_joinable, feed, hour)
            self._joinable[key] = still_there(read, feed, hour, self._required)
        return self._joinable[key]

    def fence(self, hours: Iterable[tuple[str, datetime]]) -> None:
        """Record the digest of these hours' messages now, before another reader (Spark SQL's)
        pairs from them: delivering from other ones is then FR609, as after :meth:`joinable`.
        Read first, as pairing reads them first (:func:`write_hour` writes them first)."""
        from concurrent.futures import ThreadPoolExecutor

        def digest(key: tuple[str, datetime]) -> str | None:
            read = partial(_read_tables, self._state, *key, ("messages",))
            found = still_there(read, *key, self._required)
            return None if found is None else _digest(found[0]["messages"])

        keys = list(hours)
        # a few requests an hour, up to a week of hours of each feed: several at a time
        with ThreadPoolExecutor(max_workers=FENCE_THREADS, thread_name_prefix="witness-fence") as pool:
            for key, found in zip(keys, pool.map(digest, keys), strict=True):
                if found is not None:
                    self._paired[key] = found

    def _read_joinable(self, feed: str, hour: datetime) -> HourWitnesses | None:
        read = _read_tables(self._state, feed, hour, list(_JOINABLE))
        if read is None:
            return None
        self._paired[(feed, hour)] = _digest(read[0]["messages"])
        return _joinable_hour(feed, hour, *read, self._filing)

    def _read_delivered(self, feed: str, hour: datetime) -> HourWitnesses | None:
        read = _read_tables(self._state, feed, hour, _DELIVERY_ORDER)
        if read is None:
            return None
        data, blocks = read
        paired = self._paired.get((feed, hour))
        if paired is not None and paired != _digest(data["messages"]):
            raise witnesses_changed(feed, hour)
        wanted = None if self._wanted is None else self._wanted.get((feed, hour), frozenset())
        found = decode(feed, hour, {"fragments": data["fragments"]}, wanted)
        self._messages[(feed, hour)] = _message_refs(feed, hour, data["messages"], wanted)
        found.blocks = _blocks(feed, hour, blocks)
        return found

    def forget_joinable(self) -> None:
        """Drop the hours read for pairing (once paired: delivering reads only :meth:`read`'s)."""
        self._joinable.clear()

    def provenance(self, feed: str, node: NodeRef) -> Provenance:
        """Where a paired node's message came from (its hour read by :meth:`read` before); one
        object per message, however many pairs it is in (at most the window's messages)."""
        key = (feed, node[0], node[1])
        known = self._provenances.get(key)
        if known is None:
            if self.read(feed, node[0]) is None:  # paired from it, and deleted since (the retention DAG)
                raise witnesses_gone(feed, node[0])
            refs, count = self._messages[(feed, node[0])]
            if not 0 <= node[1] < count:  # paired from other witnesses of the hour
                raise witnesses_changed(feed, node[0])
            message = refs.get(node[1])
            if message is None:
                raise ValueError(f"message {node[1]} of {feed} {format_hour(node[0])} was not expected")
            known = Provenance(feed, format_hour(node[0]), message.key, message.index, message.digest)
            self._provenances[key] = known
        return known


#: The columns of each table stage 2 pairs from.
_JOINABLE = {
    "messages": ("message", "time"),
    "roots": ("block", "message", "node"),
    "values": ("leaf", "value", "message", "node"),
}


def still_there(
    read: Callable[[], T | None], feed: str, hour: datetime, required: Collection[tuple[str, datetime]]
) -> T | None:
    """What ``read`` reads of ``feed``'s ``hour``; where the hour is ``required`` (the join stage
    found it written before it began), its absence, whole or in part, is :func:`witnesses_gone`:
    the retention DAG deleted it while the stage ran, and pairing without it would lose its pairs
    without a word."""
    if (feed, hour) not in required:
        return read()
    try:
        found = read()
    except ObjectNotFoundError as exc:  # deleted while it was read: _SUCCESS first, then the tables
        raise witnesses_gone(feed, hour) from exc
    if found is None:
        raise witnesses_gone(feed, hour)
    return found


def _message_refs(
    feed: str, hour: datetime, data: bytes, wanted: Collection[int] | None
) -> tuple[dict[int, MessageRef], int]:
    """The references of an hour's ``wanted`` messages (None: all) by number, and how many
    messages the hour has: an hour's thousands of messages are not all made into objects for the
    few that pairs deliver."""
    import pyarrow.parquet as pq

    with _readable(feed, hour, "messages.parquet"):
        table = pq.read_table(io.BytesIO(data))
        count = table.num_rows
        rows = _of_messages(table, wanted).to_pylist()
    with _readable(feed, hour, "the tables"):
        refs = {row["message"]: _message_ref(row) for row in rows}
    return refs, count


def witnesses_changed(feed: str, hour: datetime) -> FeedrouterError:
    """FR609: an hour was rewritten between pairing and delivering (routed again, back-filled)."""
    return error(
        "FR609",
        f"the join witnesses of {feed} {format_hour(hour)} were rewritten while the join stage ran "
        "(the hour routed again or back-filled meanwhile): the stage is retried with the new ones",
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def witnesses_gone(feed: str, hour: datetime) -> FeedrouterError:
    """FR609 (transient: the stage is retried, and its check back-fills the hour from its inputs)."""
    return error(
        "FR609",
        f"the join witnesses of {feed} {format_hour(hour)} were written when the join stage began and "
        "are gone (deleted by the retention DAG meanwhile?): the stage is retried, and back-fills the "
        "hour first",
    )


def _joinable(tables: dict[str, pa.Table]) -> JoinableColumns:
    """The three tables as stage 2's columns, every column checked (a damaged hour raises here,
    where :func:`_readable` names it, never later in the join)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    messages = tables["messages"].combine_chunks()
    _complete(messages, "message")
    time = messages.column("time")
    if not pa.types.is_timestamp(time.type):
        raise TypeError(f"messages.time is {time.type}, not a timestamp")
    times = time.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).fill_null(NO_TIME).to_numpy()
    if not np.array_equal(messages.column("message").to_numpy(), np.arange(len(times))):
        raise ValueError("messages are not numbered 0..n-1 in order")
    roots = tables["roots"].sort_by([("block", "ascending"), ("message", "ascending"), ("node", "ascending")])
    values = tables["values"].sort_by(
        [("leaf", "ascending"), ("value", "ascending"), ("message", "ascending"), ("node", "ascending")]
    )
    values = values.combine_chunks()
    _complete(values, "leaf", "value", "message", "node")
    encoded = pc.dictionary_encode(values.column("value")).combine_chunks()
    return JoinableColumns(
        times=times,
        roots=_runs(roots, "block", len(times)),
        values=replace(
            _runs(values, "leaf", len(times)),
            codes=encoded.indices.to_numpy().astype(np.int64),
            dictionary=encoded.dictionary.to_pylist(),
        ),
    )


def _runs(table: pa.Table, name: str, messages: int) -> Runs:
    """The rows of ``table`` (sorted by column ``name``) as runs of one name each, their nodes
    checked against the hour's ``messages``."""
    import numpy as np
    import pyarrow.compute as pc

    table = table.combine_chunks()  # one chunk: a run split between two would be two runs
    _complete(table, name, "message", "node")
    column = table.column(name)
    runs = pc.run_end_encode(column).combine_chunks() if len(column) else None
    names = runs.values.to_pylist() if runs is not None else []
    if any(later <= earlier for earlier, later in itertools.pairwise(names)):
        raise ValueError(f"the {name} column is not in runs of ascending names")
    ends = runs.run_ends.to_numpy() if runs is not None else np.zeros(0, np.int64)
    numbers = table.column("message").to_numpy().astype(np.int64)
    nodes = table.column("node").to_numpy().astype(np.int64)
    if len(numbers) and (numbers.min() < 0 or numbers.max() >= messages or nodes.min() < -1):
        raise ValueError("a node of a message the hour does not have, or an element id below -1")
    return Runs(
        names=names, starts=np.concatenate(([0], ends)).astype(np.int64), messages=numbers, nodes=nodes
    )


def _complete(table: pa.Table, *columns: str) -> None:
    """Raise ValueError when one of the columns has a null."""
    for column in columns:
        if table.column(column).null_count:
            raise ValueError(f"the {column} column has nulls")


def read_relation(
    store: ObjectStore, feed: str, hour: datetime, name: str, filing: BlockFiling | None = None
) -> pa.Table | None:
    """One of the hour's relations as an Arrow table, for an engine that joins them as relations
    (Spark SQL's executors: no Python object per row), or None when the hour has no witnesses (yet).

    ``"roots"``: ``(block, message, node, time_us)``, the event time of each bound node's message in
    microseconds, the nodes of messages without a usable time left out (they take part in no join),
    an hour of format 2 filed by the blocks of ``filing`` (:func:`_filed_roots`);
    ``"values"``: ``(leaf, value, message, node)`` as stored (and ``count``, where stored).
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if name not in ("roots", "values"):
        raise ValueError(f"no witness relation {name!r}: roots or values")
    if not has_hour(store, feed, hour):
        return None
    folder = witness_dir(feed, hour)
    data = store.get(join_key(folder, f"{name}.parquet"))
    with _readable(feed, hour, f"{name}.parquet"):
        table = pq.read_table(io.BytesIO(data))
    if name == "values":
        return table
    hour_roots = _hour_roots(feed, hour, store.get(join_key(folder, BLOCKS)))
    if hour_roots is not None:
        values = store.get(join_key(folder, "values.parquet"))
        with _readable(feed, hour, "values.parquet"):
            read = {"roots": table, "values": pq.read_table(io.BytesIO(values))}
        table = _filed_roots(feed, hour, read, hour_roots, filing)
    data = store.get(join_key(folder, "messages.parquet"))
    with _readable(feed, hour, "messages.parquet"):
        messages = pq.read_table(io.BytesIO(data), columns=["time"])
        # a message's number is its row in the messages table (``encode`` writes them 0..n-1 in order)
        times = pc.take(messages.column("time").cast("int64"), table.column("message"))
    return table.append_column("time_us", times).filter(pc.is_valid(times))


@contextmanager
def _readable(feed: str, hour: datetime, name: str) -> Iterator[None]:
    """Turn what reading a damaged table raises into FR611, naming the table and the problem."""
    try:
        yield
    # (pyarrow's errors are of these classes: ArrowInvalid a ValueError, ArrowNotImplementedError a
    # NotImplementedError, ...; RecursionError: json's parser on a document nested a thousand deep)
    except (
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        OSError,
        NotImplementedError,
        RecursionError,
    ) as exc:
        problem = f"{type(exc).__name__}: {exc}"[:300]
        folder = witness_dir(feed, hour)
        raise error(
            "FR611",
            f"{name} of the join witnesses of {feed} {format_hour(hour)} cannot be read ({problem}); "
            f"delete the hour's folder {folder}/ and the join stage back-fills it from the hour's inputs",
        ) from exc


@dataclass(frozen=True)
class BlocksJson:
    """What an hour's ``blocks.json`` says, in any of the forms hours were written in: the block
    ids alone (a list); each block with its leaves and fragments (format 1); each also with the
    witness plan it is filed from (format 2); and that with what each plan's rows hold, shapes and
    plans numbered (``{"format": 2, "shapes": ..., "plans": ..., "blocks": ...}``). What the rows
    hold is made into sets when asked for: a join stage reads every hour of its window, most of
    them for their blocks' plans alone."""

    blocks: tuple[str, ...]
    #: per block, the witness plan it is filed from (None: its roots are its own, format 1)
    roots: dict[str, str] | None = None
    #: per block, its leaves and fragments: a list ``[leaves, fragments, ...]``, or the number of
    #: its shape in ``_shapes``
    _entries: dict[str, Any] | None = field(default=None, repr=False)
    _shapes: list[list[list[str]]] | None = field(default=None, repr=False)
    #: per witness plan, the number of the shape its rows hold
    _plans: dict[str, int] | None = field(default=None, repr=False)

    @cached_property
    def coverage(self) -> Coverage | None:
        """Per block, the leaves and fragments its rows hold (None: the ids alone)."""
        if self._entries is None:
            return None
        if self._shapes is None:
            return {block: _held(shape) for block, shape in self._entries.items()}
        shapes = [_held(shape) for shape in self._shapes]
        return {block: shapes[number] for block, number in self._entries.items()}

    @cached_property
    def plans(self) -> Coverage | None:
        """Per witness plan, the leaves and fragments its rows hold (None: not recorded)."""
        if self._plans is None or self._shapes is None:
            return None
        shapes = [_held(shape) for shape in self._shapes]
        return {plan: shapes[number] for plan, number in self._plans.items()}


def _held(shape: Sequence[Sequence[str]]) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(shape[0]), frozenset(shape[1])


def _read_blocks_json(feed: str, hour: datetime, data: bytes) -> BlocksJson:
    with _readable(feed, hour, BLOCKS):
        document = json.loads(data)
        if isinstance(document, dict) and document.get("format") == 2:
            return _numbered_blocks_json(document)
        if isinstance(document, list):
            if not all(isinstance(block, str) for block in document):
                raise ValueError("not a list of block ids")
            return BlocksJson(tuple(document))
        if not isinstance(document, dict):
            raise ValueError("not a list of block ids")
        _check_coverage(document)
    shapes = iter(document.values())
    first = next(shapes, None)
    roots = {block: shape[2] for block, shape in document.items()} if first and len(first) == 3 else None
    return BlocksJson(tuple(document), roots, document)


def _numbered_blocks_json(document: dict[str, Any]) -> BlocksJson:
    """A ``blocks.json`` of format 2 with its shapes and plans numbered (:func:`_with_plans`)."""
    shapes, plans, blocks = document.get("shapes"), document.get("plans"), document.get("blocks")
    if set(document) != {"format", "shapes", "plans", "blocks"} or not (
        type(shapes) is list and type(plans) is list and type(blocks) is dict
    ):
        raise ValueError("not the shapes, witness plans and blocks of format 2")
    _check_coverage({str(n): shape for n, shape in enumerate(shapes)}, sizes=(2,))
    names: list[str] = []
    of_plan: dict[str, int] = {}
    for entry in plans:
        if not (_pair(entry) and type(entry[0]) is str and _number(entry[1], shapes)):
            raise ValueError("not witness plans with the number of their shape")
        if entry[0] in of_plan:  # a plan's rows have one shape: which of two would be a guess
            raise ValueError(f"witness plan {entry[0]!r} listed twice")
        names.append(entry[0])
        of_plan[entry[0]] = entry[1]
    entries: dict[str, int] = {}
    roots: dict[str, str] = {}
    for block, entry in blocks.items():
        if not (_pair(entry) and _number(entry[0], shapes) and _number(entry[1], names)):
            raise ValueError("not blocks with the numbers of their shape and witness plan")
        entries[block] = entry[0]
        roots[block] = names[entry[1]]
    return BlocksJson(tuple(blocks), roots, entries, shapes, of_plan)


def _pair(entry: object) -> bool:
    return type(entry) is list and len(entry) == 2


def _number(value: object, of: Sequence[object]) -> bool:
    """Whether ``value`` numbers an item of ``of`` (an int, not a bool, within it)."""
    return type(value) is int and 0 <= value < len(of)


def _blocks(feed: str, hour: datetime, data: bytes) -> tuple[str, ...]:
    """The block ids of an hour's ``blocks.json``."""
    return _read_blocks_json(feed, hour, data).blocks


def _hour_roots(feed: str, hour: datetime, data: bytes) -> dict[str, str] | None:
    """Per block, the witness plan whose rows it is filed from, where an hour's ``blocks.json`` says
    (format 2: its roots table holds the plans' roots); None for an hour whose roots are the
    blocks' own."""
    return _read_blocks_json(feed, hour, data).roots


def adopt_blocks(
    store: ObjectStore, feed: str, hour: datetime, specs: Collection[BlockSpec], roots: Mapping[str, str]
) -> tuple[str, ...] | None:
    """Cover the blocks of ``specs`` an hour lacks (holds with fewer leaves or fragments, or files
    from a plan this code does not: :func:`misfiled`) without routing it again, where the hour
    keeps each witness plan's rows whole (format 2) and records what they hold: a block is filed
    from the rows of its plan (``roots``, the plan build's) when they hold the leaves and
    fragments filing it needs (:func:`~feedrouter.join.selections.rows_needed`). Only
    ``blocks.json`` is rewritten: the tables stay as they are, so a reader finds the hour whole
    before and after.

    Returns the blocks it covered (none, when the hour held them all), or None when some block
    cannot be covered so (the hour must be routed again: nothing is written) or the hour has no
    witnesses.
    """
    found = adopt_some_blocks(store, feed, hour, specs, roots, only_all=True)
    return None if found is None or found[1] else found[0]


def adopt_some_blocks(
    store: ObjectStore,
    feed: str,
    hour: datetime,
    specs: Collection[BlockSpec],
    roots: Mapping[str, str],
    only_all: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """:func:`adopt_blocks`, covering the blocks that can be covered so even where others cannot
    (``only_all``: none unless all): the blocks covered and those left lacking (the hour must be
    routed again for them; where its inputs are gone, the joins that need only the covered ones
    are still paired). None when the hour has no witnesses of format 2 that record what they hold.
    """
    found = blocks_json_of_hour(store, feed, hour)
    if found is None or found.roots is None or found._shapes is None or found._plans is None:
        return None
    shapes = [_held(shape) for shape in found._shapes]  # a few, however many blocks
    entries, plans = cast(dict[str, int], found._entries), found._plans
    wrong = set(misfiled(found, specs))
    adopted: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {}
    left: list[str] = []
    for spec in specs:
        number = entries.get(spec.id)
        if number is not None and spec.id not in wrong:
            leaves, fragments = shapes[number]
            if leaves.issuperset(spec.leaves) and fragments.issuperset(spec.fragments):
                continue  # held, and filed as this code files it
        plan = roots.get(spec.id)
        if plan is None or plan not in plans or (plan != spec.id and plan != filed_from(spec)):
            left.append(spec.id)
            continue
        rows, (needed_leaves, needed_fragments) = shapes[plans[plan]], rows_needed(spec)
        if not (rows[0].issuperset(needed_leaves) and rows[1].issuperset(needed_fragments)):
            left.append(spec.id)
            continue
        adopted[spec.id] = (tuple(sorted(spec.leaves)), tuple(sorted(spec.fragments)), plan)
    if adopted and not (only_all and left):
        document = json.dumps(_numbered_with(found, adopted), sort_keys=True).encode()
        store.put(join_key(witness_dir(feed, hour), BLOCKS), document)
    return tuple(adopted), tuple(left)


def _numbered_with(
    found: BlocksJson, added: Mapping[str, tuple[tuple[str, ...], tuple[str, ...], str]]
) -> dict[str, Any]:
    """``found`` (a ``blocks.json`` with its shapes and plans numbered) with the blocks of ``added``
    (each with its leaves, fragments and plan), as :func:`_with_plans` writes the whole: a block's
    shape is looked up by its number, not made again."""
    assert found.roots is not None and found._shapes is not None and found._plans is not None
    written: list[Shape] = [(tuple(shape[0]), tuple(shape[1])) for shape in found._shapes]
    of_block = {block: written[number] for block, number in cast(dict[str, int], found._entries).items()}
    roots = dict(found.roots)
    for block, (leaves, fragments, plan) in added.items():
        of_block[block], roots[block] = (leaves, fragments), plan
    return _numbered_document(of_block, roots, {plan: written[n] for plan, n in found._plans.items()})


def _check_coverage(blocks: dict[str, Any], sizes: tuple[int, ...] = (2, 3)) -> None:
    """Refuse entries that are not lists of leaf names, fragment names (and a witness plan), with
    one shape for all. A join stage reads ``blocks.json`` of every hour of its window, each with
    thousands of blocks: the lists' types are checked one by one, their names once each."""
    lengths = set()
    names: set[object] = set()
    for shape in blocks.values():
        if not (
            type(shape) is list
            and len(shape) in sizes
            and type(shape[0]) is list
            and type(shape[1]) is list
            and (len(shape) == 2 or type(shape[2]) is str)
        ):
            raise ValueError("not block ids with their leaves and fragments (and witness plan)")
        try:
            names.update(shape[0], shape[1])
        except TypeError:  # a list or an object among the names
            raise ValueError("not block ids with their leaves and fragments (and witness plan)") from None
        lengths.add(len(shape))
    if not all(type(name) is str for name in names):
        raise ValueError("not block ids with their leaves and fragments (and witness plan)")
    if len(lengths) > 1:
        raise ValueError("some blocks with their witness plan and some without")


def witness_hours(store: ObjectStore, feed: str) -> list[datetime]:
    """The hours that have a witness folder of ``feed`` in ``store`` (complete or not), sorted."""
    folder = _feed_folder(feed)
    hours = {_folder_hour(key[len(folder) :]) for key in store.list(folder)}
    return sorted(hour for hour in hours if hour is not None)


def delete_hour(store: ObjectStore, feed: str, hour: datetime) -> int:
    """Delete one feed's hour of witnesses, ``_SUCCESS`` first; returns the objects deleted."""
    folder = witness_dir(feed, hour)
    marker = join_key(folder, SUCCESS)
    keys = list(store.list(folder + "/"))
    ordered = [key for key in keys if key == marker] + [key for key in keys if key != marker]
    for key in ordered:
        store.delete(key)
    return len(ordered)


#: How long after its input deadline the join stage of an hour may still run: the route DAG's run
#: lasts up to 12 hours (its routing, the wait for the window's witnesses, retries), and a day
#: leaves room for a late one. Kept witnesses cost storage; deleted ones too early, a back-fill.
RETENTION_MARGIN = timedelta(days=1)


def retention_cutoff(
    now: datetime,
    window: timedelta,
    lateness: timedelta,
    deadline: timedelta,
    margin: timedelta = RETENTION_MARGIN,
) -> datetime:
    """The first hour of witnesses still kept at ``now``; every earlier hour can be deleted.

    An hour ``H`` is last read by the join stage of ``H + lookback(window, lateness)`` hours, which
    runs once that hour has ended, after its input ``deadline`` at the latest (a late catch-up run)
    and the ``margin`` its run may take (a review found witnesses deleted while that stage could
    still run: its window then back-filled from the inputs, or failed with FR612 without them).

    >>> now = datetime(2026, 11, 27, 6, 40, tzinfo=timezone.utc)
    >>> hours = timedelta(hours=3), timedelta(hours=1), timedelta(hours=6), timedelta(0)
    >>> retention_cutoff(now, *hours).isoformat()
    '2026-11-26T20:00:00+00:00'
    >>> retention_cutoff(now, *hours[:3]).isoformat()  # a day's margin
    '2026-11-25T20:00:00+00:00'
    """
    return to_hour(now - deadline - margin) - ONE_HOUR * lookback(window, lateness)


#: Takes an hour's lease for its deletion (:func:`feedrouter.spark.lease.hour_lock`), raising
#: BatchBusyError when a routing or back-fill of the hour holds it.
HourLock = Callable[[str, datetime], AbstractContextManager[object]]


def expire_hours(
    store: ObjectStore, feed: str, before: datetime, lock: HourLock | None = None
) -> list[datetime]:
    """Delete every hour of ``feed``'s witnesses that starts before ``before``; the hours deleted.
    With ``lock``, each under its lease: an hour a routing or back-fill is writing is left for the
    next time (deleted while written, it was left marked whole with tables missing, and every join
    reading it failed with FR609 for ever)."""
    from feedrouter.spark.errors import BatchBusyError

    expired = []
    for hour in witness_hours(store, feed):
        if hour >= before:
            continue
        try:
            with lock(feed, hour) if lock is not None else nullcontext():
                delete_hour(store, feed, hour)
        except BatchBusyError:
            continue
        expired.append(hour)
    return expired


def _feed_folder(feed: str) -> str:
    """The prefix of a feed's witness hours: :func:`witness_dir` without its hour's folder."""
    some = datetime(2000, 1, 1, tzinfo=timezone.utc)
    return witness_dir(feed, some).removesuffix(hour_path(some))


def _folder_hour(rest: str) -> datetime | None:
    """The hour a key below a feed's folder is in, or None for anything else there."""
    found = _HOUR_FOLDER.match(rest)
    if found is None:
        return None
    try:
        return parse_hour(f"{found['date']}T{found['hour']}")
    except HourError:  # dt=2026-13-01: not a folder the layout writes
        return None


def encode(witnesses: WrittenHour) -> dict[str, bytes]:
    """The four tables of an hour as Parquet bytes (deterministic: sorted rows, fixed options)."""
    return {
        name: _parquet(table, VALUE_BUCKET_ROWS if name == "values" else None)
        for name, table in tables(witnesses).items()
    }


def tables(witnesses: WrittenHour) -> dict[str, pa.Table]:
    """The four tables of an hour, their rows sorted (what :func:`encode` writes)."""
    import pyarrow as pa

    return {
        "messages": _messages(pa, witnesses),
        "roots": _roots(pa, witnesses),
        "values": _values(pa, witnesses),
        "fragments": _fragments(pa, witnesses),
    }


def decode(
    feed: str, hour: datetime, tables: dict[str, bytes], messages: Collection[int] | None = None
) -> HourWitnesses:
    """An hour's witnesses from the bytes of its tables; of the tables keyed by node, only the
    rows of ``messages`` (None: all), filtered as Arrow columns before any Python object is made."""
    import pyarrow.parquet as pq

    rows = {}
    for name, data in tables.items():
        with _readable(feed, hour, f"{name}.parquet"):
            table = pq.read_table(io.BytesIO(data))
            rows[name] = (table if name == "messages" else _of_messages(table, messages)).to_pylist()
    with _readable(feed, hour, "the tables"):
        return _decoded(feed, hour, rows)


def _of_messages(table: pa.Table, messages: Collection[int] | None) -> pa.Table:
    """The rows of ``table`` whose ``message`` is one of ``messages`` (None: all of them), as Arrow
    filters them: no Python object for the others."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if messages is None:
        return table
    wanted = pa.array(sorted(messages), table.schema.field("message").type)
    return table.filter(pc.is_in(table.column("message"), value_set=wanted))


def _message_ref(row: dict[str, Any]) -> MessageRef:
    time = row["time"] and row["time"].replace(tzinfo=timezone.utc)
    return MessageRef(row["key"], row["index"], time, row["digest"])


def _decoded(feed: str, hour: datetime, rows: dict[str, list[dict[str, Any]]]) -> HourWitnesses:
    found = HourWitnesses(feed, hour)
    for row in rows.get("messages", ()):
        found.messages.append(_message_ref(row))
    for row in rows.get("roots", ()):
        found.roots.setdefault(row["block"], []).append((row["message"], row["node"]))
    for row in rows.get("values", ()):
        node = (row["message"], row["node"])
        leaves = found.values.setdefault(node, {})
        leaves[row["leaf"]] = (*leaves.get(row["leaf"], ()), row["value"])
    for row in rows.get("fragments", ()):
        found.fragments.setdefault((row["message"], row["node"]), {})[row["fragment"]] = row["data"]
    for roots in found.roots.values():
        roots.sort()
    return found


def _messages(pa: Any, witnesses: WrittenHour) -> pa.Table:
    import numpy as np

    columns = witnesses.message_columns()
    return pa.table(
        {
            "message": pa.array(np.arange(len(columns.keys), dtype=np.int32)),  # not range: a Python int each
            "key": pa.array(columns.keys, pa.string()),
            "index": pa.array(columns.indexes, pa.int32()),
            # microseconds, cast: pyarrow converts time-zone-aware datetimes through pandas (an
            # import of seconds on a worker's first hour)
            "time": pa.array(columns.times, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "digest": pa.array(columns.digests, pa.string()),
        }
    )


def _roots(pa: Any, witnesses: WrittenHour) -> pa.Table:
    columns = witnesses.root_columns()
    return pa.table(
        {
            "block": pa.array(columns.names, pa.string()).take(pa.array(columns.blocks)),
            "message": pa.array(columns.messages.astype("int32")),
            "node": pa.array(columns.nodes.astype("int32")),
        }
    )


def _values(pa: Any, witnesses: WrittenHour) -> pa.Table:
    # a leaf's values are compared as a set: each (leaf, value, node) once, with how many values
    # the leaf has (the join stage's filing of format 2 needs it: a string test of several is false)
    key = ["leaf", "value", "message", "node"]
    return _named_table(pa, witnesses.value_columns(), "leaf", "value", pa.string(), key, [*key, "count"])


def _fragments(pa: Any, witnesses: WrittenHour) -> pa.Table:
    # a node's fragment once: rows alike in the key are alike in the bytes, which need no sorting
    key = ["message", "node", "fragment"]
    columns = witnesses.fragment_columns()
    return _named_table(pa, columns, "fragment", "data", pa.binary(), key, [*key, "data"])


def _named_table(
    pa: Any,
    columns: NamedColumns,
    name: str,
    item: str,
    kind: pa.DataType,
    key: list[str],
    order: list[str],
) -> pa.Table:
    """``columns`` as a table of the columns ``order``, sorted by ``key`` and a row once per
    distinct ``key`` (the first: rows alike in it are alike in the rest). The names sort as their
    ranks (:attr:`NamedColumns.names` is ascending); where the items are in the key (a leaf's
    values), Arrow's stable multi-key sort orders the rows, the strings compared as their bytes
    (one call, where ranking the distinct values and sorting four columns of numbers took two
    to three times as long); else NumPy's sort of the numbers does."""
    import numpy as np
    import pyarrow.compute as pc

    items = _item_array(pa, columns.items, kind)
    numbers = {name: columns.name, "message": columns.messages, "node": columns.nodes}
    if item in key:
        keyed = pa.table({column: items if column == item else numbers[column] for column in key})
        kept = pc.sort_indices(keyed, sort_keys=[(column, "ascending") for column in key]).to_numpy()
    else:
        kept = np.lexsort([numbers[column] for column in key][::-1])  # the last key is lexsort's first
    ordered = items.take(pa.array(kept))
    if len(kept) > 1:
        same = np.ones(len(kept) - 1, np.bool_)
        for column in key:
            if column == item:
                alike = pc.equal(ordered.slice(1), ordered.slice(0, len(kept) - 1))
                same &= alike.to_numpy(zero_copy_only=False)
            else:
                numbered = numbers[column][kept]
                same &= numbered[1:] == numbered[:-1]
        first = np.concatenate(([True], ~same))
        kept, ordered = kept[first], ordered.filter(pa.array(first))
    built = {
        name: pa.array(columns.names, pa.string()).take(pa.array(columns.name[kept])),
        item: ordered,
        "message": pa.array(columns.messages[kept].astype("int32")),
        "node": pa.array(columns.nodes[kept].astype("int32")),
    }
    if columns.counts is not None:
        built["count"] = pa.array(columns.counts[kept].astype("int32"))
    return pa.table({column: built[column] for column in order})


#: the most bytes an Arrow string or binary array's 32-bit offsets address
_ARRAY_BYTES = 2**31 - 1


def _item_array(
    pa: Any, items: list[str] | list[bytes] | PackedItems, kind: pa.DataType
) -> pa.Array | pa.ChunkedArray:
    """The items as an Arrow column of ``kind`` (``string`` or ``binary``): a list converted,
    or packed items' buffers taken as they are (their offsets rebased, chunks joined while their
    bytes fit an array's 32-bit offsets)."""
    if not isinstance(items, PackedItems):
        return pa.array(items, kind)
    import numpy as np

    arrays: list[pa.Array] = []
    group: list[tuple[Any, Any]] = []
    size = 0
    for data, ends in items.chunks:
        if len(data) > _ARRAY_BYTES:
            raise ValueError(
                f"a batch's witness items take {len(data):,} bytes, more than an Arrow array holds"
            )
        if size + len(data) > _ARRAY_BYTES:
            arrays.append(_packed_array(pa, np, group, kind))
            group, size = [], 0
        group.append((data, ends))
        size += len(data)
    arrays.append(_packed_array(pa, np, group, kind))
    return arrays[0] if len(arrays) == 1 else pa.chunked_array(arrays, kind)


def _packed_array(pa: Any, np: Any, chunks: list[tuple[Any, Any]], kind: pa.DataType) -> pa.Array:
    """One Arrow array of packed chunks whose bytes fit its 32-bit offsets."""
    offsets = [np.zeros(1, np.int64)]
    base = 0
    for data, ends in chunks:
        offsets.append(np.frombuffer(ends, np.int64) + base if len(ends) else np.zeros(0, np.int64))
        base += len(data)
    starts = np.concatenate(offsets).astype(np.int32)
    joined = b"".join(data for data, _ in chunks)  # any buffer: the arrays of bytes as they are
    return pa.Array.from_buffers(kind, len(starts) - 1, [None, pa.py_buffer(starts), pa.py_buffer(joined)])


def _parquet(table: pa.Table, row_group_size: int | None) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=row_group_size,
        compression="zstd",
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,  # no pandas/arrow metadata that could differ between writers
    )
    return sink.getvalue()
