"""A routing task's witnesses as columns: what stage 1 sends the hour's writer (the state's format 2).

A routing task keeps each message's witness rows until it has routed :data:`~feedrouter.spark.
tasks.FILING_BATCH` messages, then turns the batch into one record (:class:`WitnessBatch`): the
messages' identities and event times, and each witness plan's rows whole as flat rows of numbers
(its roots, its leaves' values, its fragments; plans and names numbered within the batch). The
hour's writer puts the batches of every task together (:class:`BatchedHour`) and writes the same
four tables as from messages filed one by one (:class:`~feedrouter.join.relations.HourWitnesses`),
byte for byte. A record a batch instead of one a message: the record crosses Spark's shuffle
pickled, and a message's record of named tuples and dataclasses cost 36 us a message to pickle and
unpickle where a batch's lists of strings cost 6, and its buffers 1 (the join bench's population D,
2,000 items). The values and fragments are packed end to end as Arrow lays out a column
(:class:`~feedrouter.join.relations.PackedItems`): the writer takes the buffers as they are, where
a list of strings a batch cost it 4 to 5 us a message to flatten and convert (D's blogs: 7.5 us a
message for the whole writer, 3.0 packed).

Batches of one task need not be neighbours in the hour's stream (the tasks take the hour's
objects in turns): the writer numbers the messages by their place in the stream, ``(object
ordinal, index in the object)``, whatever order the batches come in.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from feedrouter import kernel
from feedrouter.join.relations import MessageColumns, NamedColumns, Names, PackedItems, RootColumns
from feedrouter.join.witness import WitnessRow

_EMPTY = np.zeros(0, np.int64)
#: numbers a flat row holds: a root's (plan, message, node), a value's (leaf, message, node,
#: count), a fragment's (name, message, node)
_ROOT, _VALUE, _FRAGMENT = 3, 4, 3


@dataclass
class WitnessBatch:
    """The witnesses of a run of a routing task's messages (picklable: the record a task sends the
    hour's writer). Messages are numbered in the batch, plans and names in order of first use.

    Attributes:
        ordinals, messages: per message, its object's ordinal and its identity, index and event
            time (microseconds; None: no time joins may use).
        plans, leaves, fragment_names: the witness plans, leaves and fragments the rows name.
        roots: per row, (its plan, its message, its node), flat, in the order they were routed
            (the rows of numbers are arrays of 64-bit integers: an array pickles as its bytes).
        value_rows, values, value_ends: per value of a row's leaf, (the leaf, the message, the
            node, how many values the leaf has in the row), flat; the values' UTF-8 end to end
            and where each ends (:class:`~feedrouter.join.relations.PackedItems`' layout).
        fragment_rows, fragments, fragment_ends: per fragment of a row, (its name, the message,
            the node), flat; the fragments' bytes end to end and where each ends.
    """

    ordinals: list[int]
    messages: MessageColumns
    plans: list[str]
    leaves: list[str]
    fragment_names: list[str]
    roots: array[int]
    value_rows: array[int]
    values: array[int]
    value_ends: array[int]
    fragment_rows: array[int]
    fragments: array[int]
    fragment_ends: array[int]

    def __len__(self) -> int:
        return len(self.ordinals)


#: a plan's numbers in a batch: its own, its leaves', its fragments' (None: a plan the build does
#: not serve, whose rows are left out)
PlanCode = tuple[int, tuple[int, ...], tuple[int, ...]] | None
#: the seven arrays a batch's rows are packed in: roots, value rows, values, value ends, fragment
#: rows, fragments, fragment ends (the values and fragments ``array('B')``, the rest ``array('q')``)
_TYPECODES = "qqBqqBq"


class RowSink:
    """Where a routing task packs its batch's rows as they are read (format 2): the batch's arrays
    and its numbering of plans, leaves and fragments. The blocks read off the tree by a walk pack
    their rows here as the message is routed (:meth:`~feedrouter.router.Router.route_outcome`'s
    ``sink``), with no object a row; :meth:`BatchBuilder.batch` packs the other plans' rows beside
    them and takes the whole (the rows of a batch are sorted where they are written: their order
    does not matter). A walked row made objects first and was packed 32 messages later, when
    routing had pushed them out of the caches.

    Attributes:
        names: per witness plan the build serves, its names.
        message: the number in the batch of the message being routed (the routing task sets it
            before routing each message: its place among the batch's messages).
        arrays: the batch's arrays so far.
    """

    def __init__(self, names: Mapping[str, Names]) -> None:
        self.names = dict(names)
        self._start()

    def _start(self) -> None:
        """An empty batch."""
        self.message = 0
        self.codes: dict[str, PlanCode] = {}
        self.plans: dict[str, int] = {}
        self.leaves: dict[str, int] = {}
        self.fragment_names: dict[str, int] = {}
        self.arrays: tuple[array[int], ...] = tuple(array(code) for code in _TYPECODES)

    def code(self, plan: str) -> PlanCode:
        """The plan's numbers in the batch, numbered on first use; None for a plan the build does
        not serve (its rows are not packed: the caller keeps them as rows)."""
        try:
            return self.codes[plan]
        except KeyError:
            found = self.codes[plan] = _plan_code(
                plan, self.names, self.plans, self.leaves, self.fragment_names
            )
            return found

    def truncate(self, mark: Sequence[int]) -> None:
        """Take the arrays back to the lengths ``mark`` gives (rows of a block refused after
        they were packed)."""
        for numbers, length in zip(self.arrays, mark, strict=True):
            del numbers[length:]

    def drop_message(self) -> None:
        """Take back every row packed for :attr:`message` (the message was refused as it was
        routed: its rows are the last ones packed)."""
        roots, value_rows, values, value_ends, fragment_rows, fragments, fragment_ends = self.arrays
        message = self.message
        _drop_rows(roots, _ROOT, message, None, None)
        _drop_rows(value_rows, _VALUE, message, values, value_ends)
        _drop_rows(fragment_rows, _FRAGMENT, message, fragments, fragment_ends)

    def take(self) -> tuple[list[str], list[str], list[str], tuple[array[int], ...]]:
        """The batch's plans, leaves and fragment names in the order they were numbered, and its
        arrays; the sink starts the next batch empty."""
        found = list(self.plans), list(self.leaves), list(self.fragment_names), self.arrays
        self._start()
        return found


def _drop_rows(
    rows: array[int], width: int, message: int, items: array[int] | None, ends: array[int] | None
) -> None:
    """Drop the last rows of ``rows`` (flat, ``width`` numbers a row, the message second) that
    belong to ``message``, with their items."""
    count = len(rows) // width
    while count and rows[(count - 1) * width + 1] == message:
        count -= 1
    del rows[count * width :]
    if items is not None and ends is not None:
        del ends[count:]
        del items[ends[-1] if ends else 0 :]


def _plan_code(
    plan: str,
    names: Mapping[str, Names],
    plans: dict[str, int],
    leaves: dict[str, int],
    fragment_names: dict[str, int],
) -> PlanCode:
    """A plan's numbers in a batch, numbering it, its leaves and its fragments where they are new
    (None: ``names`` does not name it)."""
    named = names.get(plan)
    if named is None:
        return None
    return (
        plans.setdefault(plan, len(plans)),
        tuple(leaves.setdefault(name, len(leaves)) for name in named[0]),
        tuple(fragment_names.setdefault(name, len(fragment_names)) for name in named[1]),
    )


class BatchBuilder:
    """Builds a :class:`WitnessBatch` message by message (:meth:`add`), each witness plan's rows
    kept whole (format 2: the join stage files them by block where it reads them), packed into
    ``sink`` (a routing task's: its walked rows are there already) or a sink of its own."""

    def __init__(self, names: Mapping[str, Names], sink: RowSink | None = None) -> None:
        #: where the rows are packed, with per witness plan this build serves its names
        #: (:meth:`~feedrouter.join.selections.WitnessPlans.names`; a given sink's own)
        self.sink = RowSink(names) if sink is None else sink
        self.ordinals: list[int] = []
        self.keys: list[str] = []
        self.indexes: list[int] = []
        self.times: list[int | None] = []
        self.digests: list[str] = []
        self.witnesses: list[Mapping[str, Sequence[WitnessRow]]] = []

    def __len__(self) -> int:
        return len(self.ordinals)

    def add(
        self,
        ordinal: int,
        key: str,
        index: int,
        time: int | None,
        digest: str,
        witnesses: Mapping[str, Sequence[WitnessRow]],
    ) -> None:
        """The next message: its object's ordinal and key, its index in the object, its event
        time joins may use (:class:`~feedrouter.join.relations.MessageRef`'s, in microseconds
        since the epoch: :func:`~feedrouter.join.collect.joinable_micros`), its digest, and its
        witness rows by plan (those of plans this build does not serve, a clock's or another
        build's, are left out)."""
        self.ordinals.append(ordinal)
        self.keys.append(key)
        self.indexes.append(index)
        self.times.append(time)
        self.digests.append(digest)
        self.witnesses.append(witnesses)

    def batch(self) -> WitnessBatch:
        """The messages added so far as one record (the sink's rows with them; it starts the next
        batch empty)."""
        sink = self.sink
        keep = kernel.keep_batch
        if keep is None:
            keep = _keep_batch
        keep(
            self.witnesses, sink.names, sink.codes, sink.plans, sink.leaves, sink.fragment_names, *sink.arrays
        )
        plans, leaves, fragment_names, kept = sink.take()
        roots, value_rows, values, value_ends, fragment_rows, fragments, fragment_ends = kept
        return WitnessBatch(
            ordinals=self.ordinals,
            messages=MessageColumns(self.keys, self.indexes, self.times, self.digests),
            plans=plans,
            leaves=leaves,
            fragment_names=fragment_names,
            roots=roots,
            value_rows=value_rows,
            values=values,
            value_ends=value_ends,
            fragment_rows=fragment_rows,
            fragments=fragments,
            fragment_ends=fragment_ends,
        )


def _keep_batch(
    witnesses: Sequence[Mapping[str, Sequence[WitnessRow]]],
    names: Mapping[str, Names],
    codes: dict[str, PlanCode],
    plans: dict[str, int],
    leaves: dict[str, int],
    fragment_names: dict[str, int],
    roots: array[int],
    value_rows: array[int],
    values: array[int],
    value_ends: array[int],
    fragment_rows: array[int],
    fragments: array[int],
    fragment_ends: array[int],
) -> None:
    """:func:`feedrouter.kernel.keep_batch` without the kernel (its reference)."""
    for number, found in enumerate(witnesses):
        for plan, rows in found.items():
            if not rows:
                continue
            if plan not in codes:
                codes[plan] = _plan_code(plan, names, plans, leaves, fragment_names)
            code = codes[plan]
            if code is None:
                continue
            plan_number, leaf_codes, fragment_codes = code
            for node, row_values, row_fragments in rows:
                if len(row_values) != len(leaf_codes) or len(row_fragments) != len(fragment_codes):
                    raise ValueError(
                        f"a row of witness plan {plan} does not have its plan's leaves and fragments"
                    )
                roots.extend((plan_number, number, node))
                for leaf, leaf_values in zip(leaf_codes, row_values, strict=True):
                    for value in leaf_values:
                        value_rows.extend((leaf, number, node, len(leaf_values)))
                        values.frombytes(value.encode())
                        value_ends.append(len(values))
                for name, fragment in zip(fragment_codes, row_fragments, strict=True):
                    fragment_rows.extend((name, number, node))
                    fragments.frombytes(fragment)
                    fragment_ends.append(len(fragments))


class BatchedHour:
    """An hour's witnesses put together from its tasks' batches, for the hour's writer
    (:func:`~feedrouter.spark.witnesses.write_hour`): the columns
    :class:`~feedrouter.join.relations.HourWitnesses` gives it, the messages numbered in stream
    order."""

    def __init__(
        self, feed: str, hour: datetime, blocks: tuple[str, ...], batches: Iterable[WitnessBatch]
    ) -> None:
        self.feed, self.hour, self.blocks = feed, hour, blocks
        self._batches = [batch for batch in batches if len(batch)]
        ordinals = np.array([o for batch in self._batches for o in batch.ordinals], np.int64)
        indexes = np.array([i for batch in self._batches for i in batch.messages.indexes], np.int64)
        #: the messages of the batches (in the batches' order) in stream order: ordinal, then index
        self._order = np.lexsort((indexes, ordinals))
        #: per message of the batches, its number in the hour
        self._number = np.empty(len(self._order), np.int64)
        self._number[self._order] = np.arange(len(self._order))
        self._firsts = np.cumsum([0, *(len(batch) for batch in self._batches)])
        self._roots: RootColumns | None = None

    @property
    def message_count(self) -> int:
        """How many messages the hour has."""
        return len(self._order)

    @property
    def timed_count(self) -> int:
        """How many of them have an event time joins may use."""
        return sum(time is not None for batch in self._batches for time in batch.messages.times)

    def message_columns(self) -> MessageColumns:
        """The messages in stream order."""
        order = self._order.tolist()

        def ordered(column: Sequence[Any]) -> list[Any]:
            return [column[at] for at in order]

        columns = [batch.messages for batch in self._batches]
        return MessageColumns(
            ordered([key for each in columns for key in each.keys]),
            ordered([index for each in columns for index in each.indexes]),
            ordered([time for each in columns for time in each.times]),
            ordered([digest for each in columns for digest in each.digests]),
        )

    def root_columns(self) -> RootColumns:
        """The roots sorted by plan, message and node (built once)."""
        found = self._roots
        if found is None:
            found = self._roots = self._sorted_roots()
        return found

    def _sorted_roots(self) -> RootColumns:
        names, numbered = self._numbered(lambda batch: (batch.plans, batch.roots), _ROOT)
        block, message, node = numbered
        return RootColumns.in_order(names, block, message, node, np.lexsort((node, message, block)))

    def value_columns(self) -> NamedColumns:
        """The values table's rows, unsorted (as :meth:`~feedrouter.join.relations.HourWitnesses.
        value_columns` gives them)."""
        names, (leaf, message, node, count) = self._numbered(
            lambda batch: (batch.leaves, batch.value_rows), _VALUE
        )
        values = PackedItems([(batch.values, batch.value_ends) for batch in self._batches])
        return NamedColumns(names, leaf, values, message, node, count)

    def fragment_columns(self) -> NamedColumns:
        """The fragments table's rows, unsorted."""
        names, (name, message, node) = self._numbered(
            lambda batch: (batch.fragment_names, batch.fragment_rows), _FRAGMENT
        )
        fragments = PackedItems([(batch.fragments, batch.fragment_ends) for batch in self._batches])
        return NamedColumns(names, name, fragments, message, node, None)

    def _numbered(self, flat: Any, width: int) -> tuple[list[str], list[npt.NDArray[np.int64]]]:
        """One kind of the batches' flat rows (``flat``: a batch's names and rows) as columns: the
        names sorted and the first column their ranks, the second (the message) numbered in the
        hour, the rest as they are."""
        named = [flat(batch) for batch in self._batches]
        names = sorted({name for batch_names, _ in named for name in batch_names})
        rank = {name: at for at, name in enumerate(names)}
        columns: list[list[npt.NDArray[np.int64]]] = [[_EMPTY] for _ in range(width)]
        for at, (batch_names, rows) in enumerate(named):
            table = np.frombuffer(rows, np.int64).reshape(-1, width) if len(rows) else None
            if table is None:
                continue
            ranks = np.array([rank[name] for name in batch_names], np.int64)
            columns[0].append(ranks[table[:, 0]])
            columns[1].append(self._number[self._firsts[at] + table[:, 1]])
            for column in range(2, width):
                columns[column].append(table[:, column])
        return names, [np.concatenate(pieces) for pieces in columns]
