"""A message's witnesses as the routing task files them and the hour's writer keeps them."""

from __future__ import annotations

from datetime import datetime, timezone

from feedrouter.join.relations import HourWitnesses, MessageRef, MessageWitnesses

HOUR = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_the_hour_keeps_each_blocks_nodes_in_document_order_whatever_order_they_were_filed_in() -> None:
    """Two witness plans file their rows one after the other (a node of the second plan may come
    first in the document); a node both bound is filed once per plan, its blocks in two groups."""
    first = MessageWitnesses(MessageRef("a", 0, None), bound={5: [("b1",)], 9: [("b1", "b2")]})
    first.bound[2] = [("b2",), ("b3",)]  # the second plan's rows
    first.bound[9].append(("b3",))  # ... bound a node of the first plan's too
    assert first.roots == {"b2": [2, 9], "b3": [2, 9], "b1": [5, 9]}
    second = MessageWitnesses(MessageRef("b", 0, None), bound={1: [("b1",)]})
    hour = HourWitnesses("f", HOUR)
    hour.append(first)
    hour.append(second)
    assert hour.roots == {"b2": [(0, 2), (0, 9)], "b3": [(0, 2), (0, 9)], "b1": [(0, 5), (0, 9), (1, 1)]}
    assert [m.key for m in hour.messages] == ["a", "b"]
