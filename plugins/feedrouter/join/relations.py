"""The witness relations of one feed's hour: what stage 1 keeps for stage 2 (paper 001, §3.1, §5).

Per message: its identity, arrival (hour, object key, index in the object) and event time (R_docTS);
per block: the nodes it bound (R_bin, reduced to the bound node); per bound node: the string values
of each leaf path (R_doc) and the bytes of each return fragment. Leaves and fragments are named by
their canonical texts, so an hour's relations mean the same to every later plan build.

The value index of an hour (:meth:`HourWitnesses.value_index`: leaf, value -> nodes) is paper
001's view cache: built once per hour and leaf, shared by every subscription that compares that
leaf, and, since an hour's witnesses never change once written, valid for as long as it is kept.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain
from typing import cast

import numpy as np
import numpy.typing as npt

from feedrouter import kernel
from feedrouter.join.clock import microseconds
from feedrouter.join.selections import WitnessPlans
from feedrouter.join.witness import WitnessRow

ONE_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class MessageRef:
    """One routed message of a feed's hour.

    Attributes:
        key: the input object's key; ``index``: the message's number in it (container files).
        time: its event time, or None when it has none usable (missing, unparsable, or outside
            what the feed's allowed lateness admits: :func:`admitted`): it takes part in no join.
    """

    key: str
    index: int
    time: datetime | None
    digest: str = ""  # the SHA-256 of the message's bytes (the provenance a pair carries)


def admitted(time: datetime | None, hour: datetime, lateness: timedelta) -> datetime | None:
    """The event time of a message that arrived in ``hour``, if joins may use it: not after the
    hour's end and not earlier than the allowed lateness before its start. The bound is what lets
    the join stage look back a fixed number of hours (window plus lateness) and still find every
    partner of a message."""
    if time is None or time >= hour + ONE_HOUR or time < hour - lateness:
        return None
    return time


#: the two sides of a witness row and of its names (:data:`Names`)
_LEAVES, _FRAGMENTS = 0, 1

#: a witness plan's leaf names and fragment names, in its spec's order: what a row's columns are
Names = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class MessageWitnesses:
    """One message's witnesses as a routing task sends them to the task that writes the hour's
    relations (no plan needed to read it).

    Attributes:
        bound: per node some block bound, the blocks that bound it (its root in each), in the
            groups filing found them in (:meth:`~feedrouter.join.selections.Served.bind`).
        rows: the rows of those nodes, each with its plan's names (:data:`Names`), in the order
            the plans filed them. The hour's writer names their columns
            (:meth:`HourWitnesses.settle`): a routing task builds no mapping per node.
    """

    message: MessageRef
    bound: dict[int, list[tuple[str, ...]]] = field(default_factory=dict)
    rows: list[tuple[Names, WitnessRow]] = field(default_factory=list)

    @property
    def roots(self) -> dict[str, list[int]]:
        """The nodes each block bound, in document order (R_bin of this message)."""
        roots: dict[str, list[int]] = {}
        for node in sorted(self.bound):
            for blocks in self.bound[node]:
                for block in blocks:
                    roots.setdefault(block, []).append(node)
        return roots

    @property
    def values(self) -> dict[int, dict[str, tuple[str, ...]]]:
        """Per node some block bound, its leaves' values by name."""
        return {node: named[0] for node, named in _named(self.rows).items()}

    @property
    def fragments(self) -> dict[int, dict[str, bytes]]:
        """Per node some block bound, its fragments by name."""
        return {node: named[1] for node, named in _named(self.rows).items()}


def _named(
    rows: Sequence[tuple[Names, WitnessRow]],
) -> dict[int, tuple[dict[str, tuple[str, ...]], dict[str, bytes]]]:
    """Per node, its rows' values and fragments by name; a node that several plans bound has the
    union of their names (a name two plans share is the same leaf path or fragment of the same
    node: the same value in both)."""
    named: dict[int, tuple[dict[str, tuple[str, ...]], dict[str, bytes]]] = {}
    for (leaves, names), row in rows:
        values = dict(zip(leaves, row.values, strict=True))
        fragments = dict(zip(names, row.fragments, strict=True))
        known = named.get(row.node)
        named[row.node] = (values, fragments) if known is None else (known[0] | values, known[1] | fragments)
    return named


def message_witnesses(
    message: MessageRef, witnesses: Mapping[str, Sequence[WitnessRow]], plans: WitnessPlans
) -> MessageWitnesses:
    """A routed message's witnesses: the blocks each witness plan's rows bind, and the rows of
    the nodes some block bound with their plan's names; plans not in ``plans`` (another plan
    build's, or the clock) are left out."""
    found = MessageWitnesses(message)
    plans.file(witnesses, found.bound, found.rows)
    return found


def message_rows(
    message: MessageRef, witnesses: Mapping[str, Sequence[WitnessRow]], plans: WitnessPlans
) -> MessageWitnesses:
    """A routed message's witnesses as stage 1 keeps them in the state's format 2: each witness
    plan's rows whole, its nodes filed under the plan (:meth:`~feedrouter.join.selections.
    WitnessPlans.collect`); the join stage files them by block where it reads the hour
    (:class:`~feedrouter.join.filing.BlockFiling`). Plans not in ``plans`` are left out, as
    :func:`message_witnesses` leaves them out."""
    found = MessageWitnesses(message)
    plans.collect(witnesses, found.bound, found.rows)
    return found


@dataclass
class HourWitnesses:
    """The witness relations of one feed's hour (messages in stream order).

    Node ids are ``(message number in this hour, element id)``: document order within a message,
    stream order across messages.
    """

    feed: str
    hour: datetime
    #: the blocks the hour's plan computed (a block missing here was not looked for: back-fill it)
    blocks: tuple[str, ...] = ()
    messages: list[MessageRef] = field(default_factory=list)
    _roots: dict[str, list[tuple[int, int]]] = field(default_factory=dict, repr=False)
    #: the roots filed since :attr:`roots` was last read, as the groups of blocks that bound each
    #: node (:class:`_FiledRoots`): the writer turns them round into its table in one sort
    _filed: _FiledRoots = field(default_factory=lambda: _FiledRoots(), repr=False)
    _root_columns: RootColumns | None = field(default=None, repr=False)
    _values: dict[tuple[int, int], dict[str, tuple[str, ...]]] = field(default_factory=dict, repr=False)
    _fragments: dict[tuple[int, int], dict[str, bytes]] = field(default_factory=dict, repr=False)
    #: the rows filed since :attr:`values` or :attr:`fragments` were last read, by message number:
    #: the writer reads their columns straight from them (:meth:`value_columns`, :meth:`fragment_columns`)
    _rows: list[tuple[int, list[tuple[Names, WitnessRow]]]] = field(default_factory=list, repr=False)
    #: the last messages appended with their numbers, not yet filed into the relations (:meth:`settle`)
    _pending: list[tuple[int, MessageWitnesses]] = field(default_factory=list, repr=False)
    _indexes: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict, repr=False)
    _entries: dict[str, LeafEntries] = field(default_factory=dict, repr=False)
    _arrays: HourArrays | None = field(default=None, repr=False)
    #: the hour's roots and values as columns (:meth:`of_columns`), when they were read so:
    #: stage 2's views are built from them, and :attr:`roots` and :attr:`values` stay empty
    _columns: JoinableColumns | None = field(default=None, repr=False)

    @classmethod
    def of_columns(
        cls, feed: str, hour: datetime, blocks: tuple[str, ...], columns: JoinableColumns
    ) -> HourWitnesses:
        """An hour that stage 2 can pair from (not deliver from: no fragments, no message
        identities), its views built from its columns without a Python object per row."""
        return cls(feed, hour, blocks, _columns=columns)

    @property
    def roots(self) -> dict[str, list[tuple[int, int]]]:
        """Per block, the nodes it bound in the hour, in stream order (R_bin)."""
        self.settle()
        if self._filed.hits:
            self._root_columns = None
            columns = self._filed.columns()
            self._filed = _FiledRoots()
            roots = self._roots
            nodes = list(zip(columns.messages.tolist(), columns.nodes.tolist(), strict=True))
            bounds = columns.starts.tolist()
            for at, block in enumerate(columns.names):
                if bounds[at] < bounds[at + 1]:
                    roots.setdefault(block, []).extend(nodes[bounds[at] : bounds[at + 1]])
        return self._roots

    @roots.setter
    def roots(self, roots: dict[str, list[tuple[int, int]]]) -> None:
        self.settle()
        self._filed = _FiledRoots()  # what was filed is replaced too
        self._roots = roots
        self.forget()

    def root_columns(self) -> RootColumns:
        """The roots as the witness store's table holds them: sorted by block, message and node
        (a node twice in a block's roots, if filed twice, as :attr:`roots` has it), built once."""
        self.settle()
        found = self._root_columns
        if found is None:
            found = self._root_columns = _sorted_roots(self._roots, self._filed)
        return found

    @property
    def values(self) -> dict[tuple[int, int], dict[str, tuple[str, ...]]]:
        """Per node some block bound, its leaves' values by name (R_doc)."""
        self._name_rows()
        return self._values

    @values.setter
    def values(self, values: dict[tuple[int, int], dict[str, tuple[str, ...]]]) -> None:
        self._name_rows()
        self._values = values
        self.forget()

    @property
    def fragments(self) -> dict[tuple[int, int], dict[str, bytes]]:
        """Per node some block bound, its fragments by name."""
        self._name_rows()
        return self._fragments

    @fragments.setter
    def fragments(self, fragments: dict[tuple[int, int], dict[str, bytes]]) -> None:
        self._name_rows()
        self._fragments = fragments
        self.forget()

    def _name_rows(self) -> None:
        """Name the columns of the rows filed since :attr:`values` or :attr:`fragments` were last
        read: a node's values and fragments by name (the union of its rows')."""
        self.settle()
        rows, self._rows = self._rows, []
        values, fragments = self._values, self._fragments
        for number, found in rows:
            for node, (named_values, named_fragments) in _named(found).items():
                values[(number, node)] = named_values
                fragments[(number, node)] = named_fragments

    def message_columns(self) -> MessageColumns:
        """The messages table's rows: the hour's messages in stream order."""
        messages = self.messages
        return MessageColumns(
            [m.key for m in messages],
            [m.index for m in messages],
            [None if m.time is None else microseconds(m.time) for m in messages],
            [m.digest for m in messages],
        )

    def value_columns(self) -> NamedColumns:
        """The values table's rows, unsorted: per value of a leaf of a node, the leaf, the value
        and the node (a value twice if a node's rows gave it twice: the table keeps it once)."""
        return self._named_columns(self._values, _LEAVES)

    def fragment_columns(self) -> NamedColumns:
        """The fragments table's rows, unsorted: per fragment of a node, its name, its bytes and
        the node (a fragment twice if a node's rows gave it twice: the same bytes, kept once)."""
        return self._named_columns(self._fragments, _FRAGMENTS)

    def _named_columns(
        self, named: Mapping[tuple[int, int], Mapping[str, object]], side: int
    ) -> NamedColumns:
        """The columns of one side of the rows (:data:`_LEAVES` or :data:`_FRAGMENTS`): those
        named already (``named``) and those filed since."""
        self.settle()
        found = _NamedColumnsBuilder(side)
        for (m, n), items in named.items():
            found.add(m, n, tuple(items), tuple(items.values()))
        found.add_rows(self._rows)
        return found.columns()

    def add(
        self,
        message: MessageRef,
        witnesses: Mapping[str, Sequence[WitnessRow]],
        plans: WitnessPlans,
    ) -> None:
        """File one routed message's witnesses (``RouteOutcome.witnesses``) by the blocks ``plans``
        serve (:func:`message_witnesses`)."""
        self.append(message_witnesses(message, witnesses, plans))

    def append(self, found: MessageWitnesses) -> None:
        """Add the next message of the hour (stream order) with its witnesses; they are filed
        into the relations when those are next read (:meth:`settle`)."""
        self._pending.append((len(self.messages), found))
        self.messages.append(found.message)
        self.forget()

    def settle(self) -> None:
        """File the messages appended since the relations were last read: each node's groups of
        blocks numbered (:class:`_FiledRoots`; they become the blocks' roots in one sort, when
        read), its rows kept with their message's number (their columns are named when read).
        The hour's writer reads the relations once, after the hour's last message, and its tables
        straight from these (:meth:`root_columns`, :meth:`value_columns`, :meth:`fragment_columns`)."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self._root_columns = None
        self._filed.file(pending, self._rows)

    def forget(self) -> None:
        """Drop the derived views (value indexes, memberships): they are rebuilt on next use."""
        self._indexes.clear()
        self._entries.clear()
        self._arrays = None
        self._root_columns = None

    def time_of(self, node: tuple[int, int]) -> datetime | None:
        return self.messages[node[0]].time

    def arrays(self) -> HourArrays:
        """The hour's joinable nodes as stage 2 reads them (the other half of the hour's view
        cache: which nodes each block bound, and when), built once."""
        found = self._arrays
        if found is None:
            columns = self._columns
            found = HourArrays.of(self) if columns is None else HourArrays.of_columns(self.hour, columns)
            self._arrays = found
        return found

    def leaf_entries(self, leaf: str) -> LeafEntries:
        """The joinable nodes' values of ``leaf`` as arrays, built once per leaf."""
        found = self._entries.get(leaf)
        if found is None:
            columns = self._columns
            if columns is None:
                found = LeafEntries.of(self.value_index(leaf), self.arrays().position)
            else:
                found = LeafEntries.of_columns(columns, leaf, self.arrays().keys)
            self._entries[leaf] = found
        return found

    def matches(self, leaf: str, other: HourWitnesses, other_leaf: str) -> int:
        """How many pairs of joinable nodes, one of this hour and one of ``other``, share a value
        of the two leaves (stage 2's estimate of a value join's cost)."""
        ours, theirs = self.leaf_entries(leaf), other.leaf_entries(other_leaf)
        counts = dict(zip(theirs.values, theirs.counts.tolist(), strict=True))
        return sum(
            n * counts.get(value, 0) for value, n in zip(ours.values, ours.counts.tolist(), strict=True)
        )

    def value_index(self, leaf: str) -> dict[str, list[tuple[int, int]]]:
        """value -> the nodes whose ``leaf`` has it (in stream order), built once per leaf."""
        index = self._indexes.get(leaf)
        if index is None:
            index = {}
            for node, values in self.values.items():
                for value in dict.fromkeys(values.get(leaf, ())):
                    index.setdefault(value, []).append(node)
            self._indexes[leaf] = index
        return index


@dataclass(frozen=True)
class MessageColumns:
    """An hour's messages as the witness store's messages table holds them, in stream order:
    message ``i``'s object key, index in the object, event time joins may use (microseconds since
    the epoch; None: none) and digest."""

    keys: list[str]
    indexes: list[int]
    times: list[int | None]
    digests: list[str]


@dataclass(frozen=True)
class PackedItems:
    """Items (a leaf's values as UTF-8, or fragments' bytes) packed end to end in chunks, as an
    Arrow column lays them out: per chunk, its bytes (an ``array('B')``) and where each of its
    items ends in them (an ``array('q')``). The hour's writer makes its column from the buffers
    (:func:`feedrouter.spark.witnesses.tables`), without a Python object an item."""

    chunks: list[tuple[array[int], array[int]]]


@dataclass(frozen=True)
class NamedColumns:
    """Rows of a node's named items (a leaf's values, or fragments), unsorted: row ``i`` is
    ``items[i]`` of the name ``names[name[i]]`` (``names`` ascending) of node ``nodes[i]`` of
    message ``messages[i]``."""

    names: list[str]
    name: npt.NDArray[np.int64]
    items: list[str] | list[bytes] | PackedItems
    messages: npt.NDArray[np.int64]
    nodes: npt.NDArray[np.int64]
    #: of a leaf's values, how many values the leaf has in the row that gave the value (None: fragments)
    counts: npt.NDArray[np.int64] | None = None


class _NamedColumnsBuilder:
    """The rows of :class:`NamedColumns` as they are added: a row per item, its name numbered as
    first seen (the names are ranked once, at the end). Rows added one node at a time
    (:meth:`add`) are kept in lists; a batch of filed rows (:meth:`add_rows`) is written straight
    into arrays by the compiled kernel where it is built, so the hour's writer converts no list of
    numbers; the two kinds of chunk keep the order they were added in."""

    def __init__(self, side: int) -> None:
        self.side = side  # the items are a leaf's values (:data:`_LEAVES`), or one fragment each
        self.codes: dict[tuple[str, ...], tuple[int, ...]] = {}
        self.names: dict[str, int] = {}
        self.name: list[int] = []  # per row added by :meth:`add` since the last chunk, its name's number
        self.items: list = []  # every row's item, in order
        self.messages: list[int] = []
        self.nodes: list[int] = []
        self.counts: list[int] = []  # per value row added by :meth:`add`, how many values its leaf has
        #: the rows before those in the lists, as (name, messages, nodes, counts) arrays
        self.chunks: list[tuple[npt.NDArray[np.int64], ...]] = []

    def add(self, m: int, n: int, names: tuple[str, ...], items: Sequence) -> None:
        """Add node ``n`` of message ``m``, the items of each of its ``names`` (per name a tuple
        of values, or one fragment)."""
        codes = self.codes.get(names)
        if codes is None:
            known = self.names
            codes = self.codes[names] = tuple(known.setdefault(name, len(known)) for name in names)
        if len(items) != len(codes):
            raise ValueError(f"a row has {len(items)} items for {len(codes)} names")
        if self.side == _LEAVES:
            for code, values in zip(codes, items, strict=True):
                self.name += [code] * len(values)
                self.items += values
                self.counts += [len(values)] * len(values)
        else:
            self.name += codes
            self.items += items
        count = len(self.name) - len(self.messages)
        self.messages += [m] * count
        self.nodes += [n] * count

    def add_rows(self, filed: Sequence[tuple[int, Sequence[tuple[Names, WitnessRow]]]]) -> None:
        """Add each row of ``filed`` (per message number, its rows with their names), as :meth:`add`
        does: counted and written into arrays by the compiled kernel where it is built
        (:func:`feedrouter.kernel.count_items`, :func:`feedrouter.kernel.fill_items`)."""
        count, fill = kernel.count_items, kernel.fill_items
        side = self.side
        if count is not None and fill is not None:
            rows = list(filed)
            size = count(rows, side)
            self._close_lists()
            name, messages, nodes, counts = (np.empty(size, np.int64) for _ in range(4))
            if side == _LEAVES:
                fill(rows, side, self.codes, self.names, name, self.items, messages, nodes, counts)
            else:
                fill(rows, side, self.codes, self.names, name, self.items, messages, nodes)
            self.chunks.append((name, messages, nodes, counts))
            return
        for m, found in filed:
            for names, row in found:
                # a row is (node, values, fragments), its names (leaves, fragments)
                self.add(m, row.node, names[side], cast(Sequence[object], row[1 + side]))

    def _close_lists(self) -> None:
        """The rows in the lists become a chunk (rows added later come after them)."""
        if self.name:
            counts = self.counts if self.side == _LEAVES else self.name  # (fragments': unused)
            lists = self.name, self.messages, self.nodes, counts
            self.chunks.append(tuple(np.array(column, np.int64) for column in lists))
            self.name, self.messages, self.nodes, self.counts = [], [], [], []

    def columns(self) -> NamedColumns:
        self._close_lists()
        ordered = sorted(self.names)
        rank = np.zeros(len(ordered), np.int64)
        rank[[self.names[name] for name in ordered]] = np.arange(len(ordered))
        name, messages, nodes, counts = (
            np.concatenate([chunk[at] for chunk in self.chunks]) if self.chunks else np.zeros(0, np.int64)
            for at in range(4)
        )
        return NamedColumns(
            ordered, rank[name], self.items, messages, nodes, counts if self.side == _LEAVES else None
        )


@dataclass(frozen=True)
class RootColumns:
    """An hour's roots sorted by block, message and node: ``names[blocks[i]]`` bound node
    ``nodes[i]`` of message ``messages[i]``; ``names[j]``'s rows are ``starts[j]`` up to
    ``starts[j + 1]`` (``names`` ascending, a block without rows among them only if an hour's
    roots were set so)."""

    names: list[str]
    starts: npt.NDArray[np.int64]
    blocks: npt.NDArray[np.int64]
    messages: npt.NDArray[np.int64]
    nodes: npt.NDArray[np.int64]

    @classmethod
    def in_order(
        cls,
        names: list[str],
        blocks: npt.NDArray[np.int64],
        messages: npt.NDArray[np.int64],
        nodes: npt.NDArray[np.int64],
        order: npt.NDArray[np.intp],
    ) -> RootColumns:
        """The rows ``blocks[i]``, ``messages[i]``, ``nodes[i]`` (blocks as ranks in ``names``)
        taken in ``order``, which sorts them by block, message and node."""
        blocks = blocks[order]
        return cls(
            names=names,
            starts=np.searchsorted(blocks, np.arange(len(names) + 1)).astype(np.int64),
            blocks=blocks,
            messages=messages[order],
            nodes=nodes[order],
        )


class _GroupNumbers(dict[tuple[str, ...], int]):
    """A group of blocks (a tuple filing found them in) -> its number, numbered as first seen."""

    def __missing__(self, blocks: tuple[str, ...]) -> int:
        number = self[blocks] = len(self)
        return number


class _FiledRoots:
    """Roots as filing found them: per node, the numbers of the groups of blocks that bound it.

    A message binds a node or two, each in tens of blocks found in fewer groups (a selection's
    bucket, a test's blocks). Filing a node is a look-up per group, done in C
    (:meth:`file`); its blocks' rows are made for the whole hour at once (:meth:`columns`), by a
    compiled counting sort over the blocks' ranks where it is built (:func:`_counted_roots`), else
    by array operations, instead of an append per block and node.
    """

    __slots__ = ("counts", "hits", "messages", "nodes", "numbers")

    def __init__(self) -> None:
        self.numbers = _GroupNumbers()
        self.hits: list[int] = []  # the groups' numbers, node after node
        self.counts: list[int] = []  # per node, how many of them are its
        self.messages: list[int] = []
        self.nodes: list[int] = []

    def file(
        self,
        pending: list[tuple[int, MessageWitnesses]],
        rows: list[tuple[int, list[tuple[Names, WitnessRow]]]],
    ) -> None:
        """File the nodes of each message of ``pending`` (its number, its witnesses); add its
        rows to ``rows`` with its number (the compiled loop where it is built:
        :func:`feedrouter.kernel.file_messages`)."""
        compiled = kernel.file_messages
        if compiled is not None:
            compiled(pending, self.numbers, self.hits, self.counts, self.messages, self.nodes, rows)
            return
        number = self.numbers.__getitem__
        for message, found in pending:
            for node, groups in found.bound.items():
                self.hits.extend(map(number, groups))
                self.counts.append(len(groups))
                self.messages.append(message)
                self.nodes.append(node)
            if found.rows:
                rows.append((message, found.rows))

    def columns(self) -> RootColumns:
        """The filed roots sorted by block, message and node."""
        return _sorted_roots({}, self)


def _sorted_roots(roots: Mapping[str, Sequence[tuple[int, int]]], filed: _FiledRoots) -> RootColumns:
    """``roots`` and ``filed`` together as :class:`RootColumns`."""
    groups = list(filed.numbers)
    # every block named, as its rank among the names: the groups' blocks, each group's a run,
    # then the blocks of ``roots``
    named = [*chain.from_iterable(groups), *roots]
    names = sorted(dict.fromkeys(named))  # hashing first: an hour names each block many times
    rank = {name: at for at, name in enumerate(names)}
    ranks = np.array(list(map(rank.__getitem__, named)), np.int64)
    sizes = np.array(list(map(len, groups)), np.int64)
    members = ranks[: int(sizes.sum())]
    if not roots:  # the writer's case: an hour of filed messages only
        counted = _counted_roots(names, members, sizes, filed)
        if counted is not None:
            return counted
    firsts = np.cumsum(sizes) - sizes
    hits = np.array(filed.hits, np.int64)
    per_hit = sizes[hits]
    # row r comes from hit owner[r], as the (r - its first row)th block of that hit's group
    owner = np.repeat(np.arange(len(hits)), per_hit)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(per_hit) - per_hit, per_hit)
    counts = np.array(filed.counts, np.int64)
    listed = [(m, n) for nodes in roots.values() for m, n in nodes]
    listed_blocks = np.repeat(ranks[len(members) :], [len(nodes) for nodes in roots.values()])
    listed_messages, listed_nodes = (
        np.array(column, np.int64) for column in (zip(*listed, strict=True) if listed else ((), ()))
    )
    blocks = np.concatenate((members[firsts[hits][owner] + within], listed_blocks))
    messages = np.concatenate((np.repeat(np.array(filed.messages, np.int64), counts)[owner], listed_messages))
    nodes = np.concatenate((np.repeat(np.array(filed.nodes, np.int64), counts)[owner], listed_nodes))
    # rows filed in stream order (all but the nodes of a message that two plans bound, and
    # ``roots``) need only a stable sort by block, a radix sort where the blocks' ranks fit 16
    # bits; else one sort of one number per row: the block's rank, then the node's among the hour's
    keys = _keys(messages, nodes)
    if _ascending(keys):
        order = np.argsort(blocks.astype(np.uint16) if len(names) <= 1 << 16 else blocks, kind="stable")
    else:
        ordinal = np.unique(keys, return_inverse=True)[1].reshape(-1)
        order = np.argsort(blocks * (len(keys) + 1) + ordinal)
    return RootColumns.in_order(names, blocks, messages, nodes, order)


def _counted_roots(
    names: list[str], members: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], filed: _FiledRoots
) -> RootColumns | None:
    """:func:`_sorted_roots` of filed roots alone by the compiled counting sort
    (:func:`feedrouter.kernel.sorted_roots`): the same rows in the same order, where the nodes
    were filed in stream order (a stable sort by block is then the whole sort); None where it is
    not built or they were not (two plans' rows of a message out of document order): the array
    path sorts those."""
    compiled = kernel.sorted_roots
    if compiled is None:
        return None
    messages = np.array(filed.messages, np.int64)
    nodes = np.array(filed.nodes, np.int64)
    if not _ascending(_keys(messages, nodes)):
        return None
    hits = np.array(filed.hits, np.int64)
    firsts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=firsts[1:])
    rows = int(sizes[hits].sum())
    starts = np.zeros(len(names) + 1, np.int64)
    blocks, out_messages, out_nodes = (np.empty(rows, np.int64) for _ in range(3))
    counts = np.array(filed.counts, np.int64)
    compiled(members, firsts, hits, counts, messages, nodes, starts, blocks, out_messages, out_nodes)
    return RootColumns(names=names, starts=starts, blocks=blocks, messages=out_messages, nodes=out_nodes)


@dataclass(frozen=True)
class HourArrays:
    """An hour's joinable nodes (a block bound them, their message has a usable event time) in
    stream order, a node's position in :attr:`refs` being its number in every array."""

    refs: list[tuple[datetime, int, int]]  # (hour, message number, element id): a pair's nodes
    position: Mapping[tuple[int, int], int]  # a node's number in every array
    times: npt.NDArray[np.int64]  # the message's event time, microseconds since the epoch
    messages: npt.NDArray[np.int64]  # the message's number in the hour
    blocks: Mapping[str, npt.NDArray[np.int64]]  # block -> the positions it bound, ascending
    #: each node's ``message << 32 | element id + 1``, ascending (the document node's id is -1): a
    #: node's position by binary search
    keys: npt.NDArray[np.int64]

    @classmethod
    def of(cls, hw: HourWitnesses) -> HourArrays:
        def timed(node: tuple[int, int]) -> bool:
            return hw.messages[node[0]].time is not None

        nodes = sorted({node for roots in hw.roots.values() for node in roots if timed(node)})
        position = {node: number for number, node in enumerate(nodes)}
        times = [hw.messages[m].time for m, _ in nodes]
        return cls(
            refs=[(hw.hour, *node) for node in nodes],
            position=position,
            times=np.array([microseconds(t) for t in times if t is not None], np.int64),
            messages=np.array([m for m, _ in nodes], np.int64),
            blocks={
                block: np.unique(np.array([position[n] for n in roots if n in position], np.int64))
                for block, roots in hw.roots.items()
            },
            keys=_keys(np.array([m for m, _ in nodes], np.int64), np.array([n for _, n in nodes], np.int64)),
        )

    @classmethod
    def of_columns(cls, hour: datetime, columns: JoinableColumns) -> HourArrays:
        """The same arrays from an hour's columns, set at a time."""
        roots = columns.roots
        timed = columns.times[roots.messages] != NO_TIME
        keys = _keys(roots.messages[timed], roots.nodes[timed])
        unique = np.unique(keys)
        positions = np.searchsorted(unique, keys)
        blocks = np.repeat(np.arange(len(roots.names)), np.diff(roots.starts))[timed]
        # rows are sorted by block, message and node: a block's positions ascend; a row twice, once
        once = np.ones(len(positions), np.bool_)
        once[1:] = (positions[1:] != positions[:-1]) | (blocks[1:] != blocks[:-1])
        blocks, positions = blocks[once], positions[once]
        starts = np.searchsorted(blocks, np.arange(len(roots.names) + 1))
        ours = unique >> 32
        nodes = list(zip(ours.tolist(), ((unique & 0xFFFFFFFF) - 1).tolist(), strict=True))
        return cls(
            refs=[(hour, m, n) for m, n in nodes],
            position=_Positions(unique),
            times=columns.times[ours],
            messages=ours,
            blocks=_Bound(roots.names, starts, positions),
            keys=unique,
        )


@dataclass(frozen=True)
class LeafEntries:
    """An hour's joinable nodes' values of one leaf: ``values[i]`` is held by ``counts[i]`` nodes,
    whose positions (:class:`HourArrays`) come next in ``positions``, ascending (a node once per
    distinct value it has)."""

    values: list[str]
    counts: npt.NDArray[np.int64]
    positions: npt.NDArray[np.int64]

    @classmethod
    def of(
        cls, index: Mapping[str, list[tuple[int, int]]], position: Mapping[tuple[int, int], int]
    ) -> LeafEntries:
        values, counts, positions = [], [], []
        for value, nodes in index.items():
            mine = sorted(p for node in nodes if (p := position.get(node)) is not None)
            if mine:
                values.append(value)
                counts.append(len(mine))
                positions += mine
        return cls(values, np.array(counts, np.int64), np.array(positions, np.int64))

    @classmethod
    def of_columns(cls, columns: JoinableColumns, leaf: str, keys: npt.NDArray[np.int64]) -> LeafEntries:
        """The same entries from an hour's columns (``keys``: its joinable nodes', ascending)."""
        found = columns.values
        try:
            at = found.names.index(leaf)
        except ValueError:
            return cls([], _NONE, _NONE)
        first, last = int(found.starts[at]), int(found.starts[at + 1])
        codes = found.codes[first:last]
        wanted = _keys(found.messages[first:last], found.nodes[first:last])
        positions = np.searchsorted(keys, wanted)
        joinable = positions < len(keys)
        joinable[joinable] = keys[positions[joinable]] == wanted[joinable]
        codes, positions = codes[joinable], positions[joinable]
        order = np.lexsort((positions, codes))
        codes, positions = codes[order], positions[order]
        once = np.ones(len(codes), np.bool_)  # a value once per node, as the rows' reading gives it
        once[1:] = (codes[1:] != codes[:-1]) | (positions[1:] != positions[:-1])
        codes, positions = codes[once], positions[once]
        if not len(codes):
            return cls([], _NONE, _NONE)
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
        counts = np.diff(np.append(starts, len(codes)))
        values = [found.dictionary[code] for code in codes[starts].tolist()]
        return cls(values, counts.astype(np.int64), positions.astype(np.int64))


#: A message without a usable event time in :attr:`JoinableColumns.times`.
NO_TIME = np.iinfo(np.int64).min
_NONE: npt.NDArray[np.int64] = np.zeros(0, np.int64)


@dataclass(frozen=True)
class Runs:
    """Rows sorted by a name (a block, a leaf path): ``names[i]``'s rows are ``starts[i]`` up to
    ``starts[i + 1]``; each row a node (message number, element id) and, for values, the number
    of its value in ``dictionary``."""

    names: list[str]
    starts: npt.NDArray[np.int64]  # len(names) + 1 entries, the last the number of rows
    messages: npt.NDArray[np.int64]
    nodes: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64] = field(default_factory=lambda: _NONE)
    dictionary: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class JoinableColumns:
    """What stage 2 pairs from of an hour, as the witness store's columns: each message's event
    time (microseconds, :data:`NO_TIME` when it has none), the roots by block and the values by
    leaf path."""

    times: npt.NDArray[np.int64]
    roots: Runs
    values: Runs


def _ascending(keys: npt.NDArray[np.int64]) -> bool:
    """Whether nodes' keys (:func:`_keys`) come in stream order, a node again beside itself allowed."""
    return bool(np.all(keys[1:] >= keys[:-1]))


def _keys(messages: npt.NDArray[np.int64], nodes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Nodes as one ascending number each, in stream order (element ids are int32, -1 the
    document node: shifted to 0 .. 2³¹)."""
    return (messages.astype(np.int64) << 32) | (nodes.astype(np.int64) + 1)


class _Positions(Mapping[tuple[int, int], int]):
    """A node's position among an hour's joinable nodes, by binary search of their keys (no
    Python object per node)."""

    def __init__(self, keys: npt.NDArray[np.int64]) -> None:
        self._keys = keys

    def __getitem__(self, node: tuple[int, int]) -> int:
        key = (node[0] << 32) | (node[1] + 1)
        at = int(np.searchsorted(self._keys, key))
        if at == len(self._keys) or self._keys[at] != key:
            raise KeyError(node)
        return at

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for key in self._keys.tolist():
            yield key >> 32, (key & 0xFFFFFFFF) - 1

    def __len__(self) -> int:
        return len(self._keys)


class _Bound(Mapping[str, npt.NDArray[np.int64]]):
    """Block -> the positions it bound, ascending: slices of one array, made when asked for (an
    hour of a large population has tens of thousands of blocks, a run of stage 2 reads a few)."""

    def __init__(self, names: list[str], starts: npt.NDArray[np.int64], positions: npt.NDArray[np.int64]):
        self._names, self._starts, self._positions = names, starts, positions

    def __getitem__(self, block: str) -> npt.NDArray[np.int64]:
        at = bisect.bisect_left(self._names, block)
        if at == len(self._names) or self._names[at] != block:
            raise KeyError(block)
        return self._positions[self._starts[at] : self._starts[at + 1]]

    def __contains__(self, block: object) -> bool:
        at = bisect.bisect_left(self._names, block) if isinstance(block, str) else len(self._names)
        return at < len(self._names) and self._names[at] == block

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
