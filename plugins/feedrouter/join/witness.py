"""Witnesses: what stage 1 delivers of one document for one block (paper 001's R_bin / R_doc rows).

For every node the block's plan binds (its element id: document order), the string values of the
block's leaf paths and the bytes of its return fragments, read from the same run over the document
that serves every other subscription (no second pass). The router files them in
:attr:`~feedrouter.router.RouteOutcome.witnesses` under the witness plan's id: a block's, or a base
that serves many blocks (:mod:`feedrouter.join.selections` says which blocks its rows bind).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from feedrouter.output.factory import render_items_within
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.results import ReturnItem


@dataclass(frozen=True)
class WitnessRow:
    """One bound node of a block in one document.

    Attributes:
        node: the element's id in the document (preorder: document order).
        values: per leaf path of the block (its spec's order), the string values it selects.
        fragments: per fragment of the block (its spec's order), the rendered bytes.
    """

    node: int
    values: tuple[tuple[str, ...], ...]
    fragments: tuple[bytes, ...]


def witness_rows(
    returns: Sequence[ReturnItem],
    leaves: int,
    default_ns: Sequence[str],
    ctx: DocumentContext,
    bound: Sequence[int],
    limit: int,
) -> tuple[list[WitnessRow], int] | None:
    """The rows of one block in one document and their size in bytes: ``returns`` are its plan's
    return items, the first ``leaves`` of them leaf paths, the others fragments rendered in
    constructors with the default namespaces ``default_ns``. None as soon as the rows pass ``limit``
    bytes (the caller refuses the block's witnesses for this document, as a subscription's result
    past its limit)."""
    rows: list[WitnessRow] = []
    size = 0
    for node in bound:
        built = _row(returns, leaves, default_ns, ctx, node, limit - size)
        if built is None:
            return None
        row, row_size = built
        size += row_size
        rows.append(row)
    return rows, size


def _row(
    returns: Sequence[ReturnItem],
    leaves: int,
    default_ns: Sequence[str],
    ctx: DocumentContext,
    node: int,
    limit: int,
) -> tuple[WitnessRow, int] | None:
    """One node's row and its size in bytes (with 16 for its bookkeeping); None past ``limit``.
    Leaf values and fragments are cached per node and item: every block binding the node shares
    them (blocks' leaf and fragment sets differ too often for whole rows to be shared)."""
    known_values, known_fragments = ctx.caches.witness_values, ctx.caches.witness_fragments
    size = 16
    values = []
    for item in returns[:leaves]:  # items are interned: blocks binding one node share them
        found = known_values.get((item, node))
        if found is None:
            strings = tuple(item.values(ctx, node))
            found = known_values[(item, node)] = (strings, sum(len(v) for v in strings))
        values.append(found[0])
        size += found[1]
    fragments = []
    for item, ns in zip(returns[leaves:], default_ns, strict=True):
        data = known_fragments.get((item, ns, node))
        if data is None:
            data = render_items_within(item.select(ctx, node), ctx, limit - size, ns)
            if data is None:
                return None
            known_fragments[(item, ns, node)] = data
        fragments.append(data)
        size += len(data)
    if size > limit:
        return None
    return WitnessRow(node, tuple(values), tuple(fragments)), size
