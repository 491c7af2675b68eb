"""Witnesses: what stage 1 delivers of one document for one block (paper 001's R_bin / R_doc rows).

For every node the block's plan binds (its element id: document order), the string values of the
block's leaf paths and the bytes of its return fragments, read from the same run over the document
that serves every other subscription (no second pass). The router files them in
:attr:`~feedrouter.router.RouteOutcome.witnesses` under the block's id.
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

    @property
    def size(self) -> int:
        """Bytes this row holds (charged to the document's result budget)."""
        return sum(len(v) for vs in self.values for v in vs) + sum(len(f) for f in self.fragments)


def witness_rows(
    returns: Sequence[ReturnItem],
    leaves: int,
    default_ns: Sequence[str],
    ctx: DocumentContext,
    bound: Sequence[int],
    limit: int,
) -> list[WitnessRow] | None:
    """The rows of one block in one document: ``returns`` are its plan's return items, the first
    ``leaves`` of them leaf paths, the others fragments rendered in constructors with the default
    namespaces ``default_ns``. None as soon as the rows pass ``limit`` bytes (the caller refuses
    the block's witnesses for this document, as a subscription's result past its limit)."""
    rows = []
    size = 0
    known_values, known_fragments = ctx.caches.witness_values, ctx.caches.witness_fragments
    for node in bound:
        values = []
        for item in returns[:leaves]:  # items are interned: blocks binding one node share them
            found = known_values.get((item, node))
            if found is None:
                found = known_values[(item, node)] = tuple(item.values(ctx, node))
            values.append(found)
        fragments = []
        for item, ns in zip(returns[leaves:], default_ns, strict=True):
            data = known_fragments.get((item, ns, node))
            if data is None:
                data = render_items_within(item.select(ctx, node), ctx, limit - size, ns)
                if data is None:
                    return None
                known_fragments[(item, ns, node)] = data
            fragments.append(data)
        row = WitnessRow(node, tuple(values), tuple(fragments))
        size += row.size + 16  # a row's own bookkeeping counts too
        if size > limit:
            return None
        rows.append(row)
    return rows
