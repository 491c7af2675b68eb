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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np
import numpy.typing as npt

from feedrouter.join.selections import WitnessPlans
from feedrouter.join.witness import WitnessRow

ONE_HOUR = timedelta(hours=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


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


def microseconds(time: datetime) -> int:
    """An event time as microseconds since the epoch (how the witness tables and the join stage's
    arrays hold it)."""
    return (time - _EPOCH) // _MICROSECOND


def admitted(time: datetime | None, hour: datetime, lateness: timedelta) -> datetime | None:
    """The event time of a message that arrived in ``hour``, if joins may use it: not after the
    hour's end and not earlier than the allowed lateness before its start. The bound is what lets
    the join stage look back a fixed number of hours (window plus lateness) and still find every
    partner of a message."""
    if time is None or time >= hour + ONE_HOUR or time < hour - lateness:
        return None
    return time


@dataclass
class MessageWitnesses:
    """One message's witnesses with their leaves and fragments named (what a routing task sends
    to the task that writes the hour's relations: no plan needed to read it)."""

    message: MessageRef
    roots: dict[str, list[int]] = field(default_factory=dict)
    values: dict[int, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    fragments: dict[int, dict[str, bytes]] = field(default_factory=dict)


def message_witnesses(
    message: MessageRef, witnesses: Mapping[str, Sequence[WitnessRow]], plans: WitnessPlans
) -> MessageWitnesses:
    """Name a routed message's witness rows: the blocks each witness plan's rows bind, and the
    leaves' values and fragments of the nodes some block bound; plans not in ``plans`` (another
    plan build's, or the clock) are left out."""
    found = MessageWitnesses(message)
    for plan, rows in witnesses.items():
        served = plans.served.get(plan)
        if served is None:
            continue
        kept = served.bind(rows, found.roots)  # a block is served by one plan: it files alone
        if not kept:
            continue
        spec = plans.bases[plan]
        for row in kept:
            node = row.node
            values = dict(zip(spec.leaves, row.values, strict=True))
            fragments = dict(zip(spec.fragments, row.fragments, strict=True))
            if node in found.values:  # another plan's rows bound the node too
                values = found.values[node] | values
                fragments = found.fragments[node] | fragments
            found.values[node], found.fragments[node] = values, fragments
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
    roots: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    values: dict[tuple[int, int], dict[str, tuple[str, ...]]] = field(default_factory=dict)
    fragments: dict[tuple[int, int], dict[str, bytes]] = field(default_factory=dict)
    _indexes: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict, repr=False)
    _entries: dict[str, LeafEntries] = field(default_factory=dict, repr=False)
    _arrays: HourArrays | None = field(default=None, repr=False)

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
        """File the next message of the hour (stream order) with its named witnesses."""
        number = len(self.messages)
        self.messages.append(found.message)
        for block, nodes in found.roots.items():
            self.roots.setdefault(block, []).extend((number, node) for node in nodes)
        for node, values in found.values.items():
            self.values[(number, node)] = values
        for node, fragments in found.fragments.items():
            self.fragments[(number, node)] = fragments
        self.forget()

    def forget(self) -> None:
        """Drop the derived views (value indexes, memberships): they are rebuilt on next use."""
        self._indexes.clear()
        self._entries.clear()
        self._arrays = None

    def time_of(self, node: tuple[int, int]) -> datetime | None:
        return self.messages[node[0]].time

    def arrays(self) -> HourArrays:
        """The hour's joinable nodes as stage 2 reads them (the other half of the hour's view
        cache: which nodes each block bound, and when), built once."""
        found = self._arrays
        if found is None:
            found = self._arrays = HourArrays.of(self)
        return found

    def leaf_entries(self, leaf: str) -> LeafEntries:
        """The joinable nodes' values of ``leaf`` as arrays, built once per leaf."""
        found = self._entries.get(leaf)
        if found is None:
            found = self._entries[leaf] = LeafEntries.of(self.value_index(leaf), self.arrays().position)
        return found

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
class HourArrays:
    """An hour's joinable nodes (a block bound them, their message has a usable event time) in
    stream order, a node's position in :attr:`refs` being its number in every array."""

    refs: list[tuple[datetime, int, int]]  # (hour, message number, element id): a pair's nodes
    position: dict[tuple[int, int], int]
    times: npt.NDArray[np.int64]  # the message's event time, microseconds since the epoch
    messages: npt.NDArray[np.int64]  # the message's number in the hour
    blocks: dict[str, npt.NDArray[np.int64]]  # block -> the positions it bound, ascending

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
