"""Filing an hour's witness rows by block where the join stage reads them (the state's format 2).

Stage 1 runs in the pass that routes every message, so what it does per message is what the
routing of a feed with join subscriptions costs on top of its ordinary subscriptions. Its witness
plans read a base's rows (:mod:`feedrouter.join.selections`: the blocks that differ only in the
constants they select on share one base plan); which of its thousands of blocks each row binds is a
selection on the row's values, paper 001's stage 2 work. So stage 1 writes each plan's rows whole,
the roots filed under the plan itself (:meth:`~feedrouter.join.selections.WitnessPlans.collect`),
and the hour's ``blocks.json`` records, per block, the plan it is filed from. The join stage files
an hour's rows by the blocks its joins need as it reads the hour (:class:`BlockFiling`), with the
same tests as filing in stage 1 did (:meth:`~feedrouter.join.selections.Served.bind`), once per
hour read.

A row's values come back from the hour's values table, where a leaf's values are a set per node
(the table's rows are distinct): its ``count`` column keeps how many values the leaf had, since a
string test's argument of more than one node is false however alike the values are. The tests are
otherwise existential over the values, so a leaf's distinct values, with one repeated up to its
count, decide every test as the row itself did.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from feedrouter.join.plan import BlockSpec
from feedrouter.join.selections import Served, filed_from, shared_base
from feedrouter.join.witness import WitnessRow

#: A node's key while filing: its message's number above, its element id (plus one: the document
#: node is -1) below
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1

#: Per block, its roots in an hour: (message numbers, element ids), in stream order
Roots = dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]


@dataclass(frozen=True)
class LeafRows:
    """One leaf's values in an hour, a row per distinct value of a node: ``values[i]`` of node
    ``nodes[i]`` of message ``messages[i]``, whose leaf has ``counts[i]`` values in all."""

    values: Sequence[str]
    messages: npt.NDArray[np.int64]
    nodes: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]


class BlockFiling:
    """Files format-2 hours by the blocks of ``specs`` (the blocks a join stage's plans read).

    Picklable (it travels to Spark's executors with the tasks that read witness hours); the bases
    it files by (:func:`~feedrouter.join.selections.shared_base`) are built on first use in each
    process and kept for the hours and the tasks that follow (:data:`_BUILT`).
    """

    def __init__(self, specs: Mapping[str, BlockSpec]) -> None:
        self.specs = dict(specs)
        self._bases: dict[tuple[str, ...], tuple[BlockSpec, Served]] = {}

    def __getstate__(self) -> dict[str, object]:
        return {"specs": self.specs}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._bases = {}

    def file(
        self,
        hour_roots: Mapping[str, str],
        plan_roots: Callable[[str], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None],
        leaf_rows: Callable[[str], LeafRows | None],
    ) -> Roots:
        """Per block of the hour that this filing knows, the nodes it binds.

        Args:
            hour_roots: the hour's ``blocks.json``: per block, the witness plan it is filed from.
            plan_roots: the nodes a plan's rows hold (its rows in the roots table), or None.
            leaf_rows: a leaf's values in the hour (the values table's rows of that leaf), or None.
        """
        members: dict[str, list[str]] = {}
        for block, plan in hour_roots.items():
            if block in self.specs:
                if plan != block and plan != filed_from(self.specs[block]):
                    raise ValueError(
                        f"block {block} is filed from witness plan {plan}, a base this code does not "
                        "file it from (the hour was written by code that factors it otherwise)"
                    )
                members.setdefault(plan, []).append(block)
        found: Roots = {}
        for plan, blocks in sorted(members.items()):
            rows = plan_roots(plan)
            if rows is None or not len(rows[0]):
                continue
            if plan in blocks:  # compiled as it is (or the base itself): its roots are its own
                found[plan] = rows
            others = tuple(sorted(block for block in blocks if block != plan))
            if others:
                found.update(self._file_base(others, rows, leaf_rows))
        return found

    def _file_base(
        self,
        blocks: tuple[str, ...],
        rows: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
        leaf_rows: Callable[[str], LeafRows | None],
    ) -> Roots:
        """The nodes each of ``blocks`` binds among a base's ``rows``, by the base's tests."""
        base, served = self._base(blocks)
        keys = _keys(*rows)
        # per node, per leaf its values
        slots: dict[int, list[list[str]]] = {key: [[] for _ in base.leaves] for key in keys.tolist()}
        counts: dict[tuple[int, int], int] = {}  # (node, leaf): how many values, where more than one
        for at, leaf in enumerate(base.leaves):
            found = leaf_rows(leaf)
            if found is None:
                continue
            for key, value, count in zip(
                _keys(found.messages, found.nodes).tolist(), found.values, found.counts.tolist(), strict=True
            ):
                slot = slots.get(key)
                if slot is None:
                    continue  # a node of another plan's rows
                slot[at].append(value)
                if count > 1:
                    counts[(key, at)] = count
        for (key, at), count in counts.items():
            values = slots[key][at]
            values += [values[0]] * (count - len(values))  # as many as the row had (string tests)
        bound: dict[int, list[tuple[str, ...]]] = {}
        served.bind([WitnessRow(key, tuple(map(tuple, slot)), ()) for key, slot in slots.items()], bound)
        by_block: dict[str, list[int]] = {}
        for key, groups in bound.items():  # in the rows' order: stream order
            for group in groups:
                for block in group:
                    by_block.setdefault(block, []).append(key)
        return {block: _nodes(np.array(filed, np.int64)) for block, filed in by_block.items()}

    def _base(self, blocks: tuple[str, ...]) -> tuple[BlockSpec, Served]:
        found = self._bases.get(blocks)
        if found is None:
            found = self._bases[blocks] = _shared_base(blocks, self.specs)
        return found


#: the bases this process built, by their blocks, the most recently used last: a block's id is the
#: digest of its feed and text (:func:`~feedrouter.join.plan.block_spec`), so a tuple of ids names
#: one base whichever filing asks for it. Spark's executors unpickle a new :class:`BlockFiling` for
#: every task that reads witness hours, in Python workers that outlive the task; a base of 30,738
#: blocks (the join bench's population C) takes 8 s to build
_BUILT: OrderedDict[tuple[str, ...], tuple[BlockSpec, Served]] = OrderedDict()
#: the most bases :data:`_BUILT` keeps (a join stage files by one base a witness plan; a worker
#: serves the join stages of a few feeds)
KEPT_BASES = 8


def _shared_base(blocks: tuple[str, ...], specs: Mapping[str, BlockSpec]) -> tuple[BlockSpec, Served]:
    """The base :func:`~feedrouter.join.selections.shared_base` makes of ``blocks``, built once a
    process (:data:`_BUILT`)."""
    found = _BUILT.get(blocks)
    if found is None:
        found = shared_base([specs[block] for block in blocks])
        _BUILT[blocks] = found
        while len(_BUILT) > KEPT_BASES:
            _BUILT.popitem(last=False)
    else:
        _BUILT.move_to_end(blocks)
    return found


def _keys(messages: npt.NDArray[np.int64], nodes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return (messages.astype(np.int64) << _SHIFT) | (nodes.astype(np.int64) + 1)


def _nodes(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    return keys >> _SHIFT, (keys & _LOW) - 1
