"""A message's witnesses as the routing task files them and the hour's writer keeps them."""

from __future__ import annotations

from datetime import datetime, timezone

from feedrouter.join.relations import HourWitnesses, MessageRef, MessageWitnesses
from feedrouter.join.witness import WitnessRow

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


def test_a_message_s_rows_are_named_by_the_hour_as_they_were_filed() -> None:
    """Routing tasks send rows with their plans' names; the hour names them when it is read, a node
    two plans bound holding both plans' names, and messages added after a read come after it."""
    first_plan = (("author", "@lang"), ("nodes  author",))
    second_plan = (("title",), ("nodes  title", "value  title"))
    both = MessageWitnesses(
        MessageRef("a", 0, None),
        bound={3: [("b1",), ("b2",)], 8: [("b1",)]},
        rows=[
            (first_plan, WitnessRow(3, (("x",), ("en",)), (b"<author>x</author>",))),
            (first_plan, WitnessRow(8, (("y",), ()), (b"<author>y</author>",))),
            (second_plan, WitnessRow(3, (("t",),), (b"<title>t</title>", b"t"))),
        ],
    )
    assert both.values == {
        3: {"author": ("x",), "@lang": ("en",), "title": ("t",)},
        8: {"author": ("y",), "@lang": ()},
    }
    assert both.fragments[3] == {
        "nodes  author": b"<author>x</author>",
        "nodes  title": b"<title>t</title>",
        "value  title": b"t",
    }
    hour = HourWitnesses("f", HOUR)
    hour.append(both)
    assert hour.values == {(0, n): named for n, named in both.values.items()}
    assert hour.fragments == {(0, n): named for n, named in both.fragments.items()}
    assert hour.roots == {"b1": [(0, 3), (0, 8)], "b2": [(0, 3)]}
    later = MessageWitnesses(
        MessageRef("b", 0, None),
        bound={1: [("b2",)]},
        rows=[(first_plan, WitnessRow(1, (("z",), ()), (b"",)))],
    )
    hour.append(later)
    assert hour.roots == {"b1": [(0, 3), (0, 8)], "b2": [(0, 3), (1, 1)]}
    assert hour.values[(1, 1)] == {"author": ("z",), "@lang": ()}
    assert [m.key for m in hour.messages] == ["a", "b"]


def test_relations_set_replace_what_was_filed_before() -> None:
    """An hour's roots set as a mapping (a decoded hour, a test) replace the ones filed before,
    whether they were read or not; messages filed after them add to them."""
    hour = HourWitnesses("f", HOUR)
    hour.append(MessageWitnesses(MessageRef("a", 0, None), bound={4: [("b1",)]}))
    hour.roots = {"b2": [(0, 7)]}
    assert hour.roots == {"b2": [(0, 7)]}
    hour.append(MessageWitnesses(MessageRef("b", 0, None), bound={2: [("b2", "b3")]}))
    assert hour.roots == {"b2": [(0, 7), (1, 2)], "b3": [(1, 2)]}
    columns = hour.root_columns()
    assert columns.names == ["b2", "b3"] and columns.starts.tolist() == [0, 2, 3]
    nodes = list(zip(columns.messages.tolist(), columns.nodes.tolist(), strict=True))
    assert nodes == [(0, 7), (1, 2), (1, 2)]


def test_roots_filed_in_stream_order_sort_by_block_whatever_the_number_of_blocks() -> None:
    """Roots filed in stream order are sorted by block alone (stable: a block's nodes keep their
    order), blocks ranked in 16 bits or, past 65,536 of them, in 64."""
    for count in (3, 70_000):
        blocks = [f"b{i:06}" for i in range(count)]
        hour = HourWitnesses("f", HOUR)
        first = {1: [tuple(blocks[::-1])], 5: [("b000001",)]}
        hour.append(MessageWitnesses(MessageRef("a", 0, None), bound=first))
        hour.append(MessageWitnesses(MessageRef("b", 0, None), bound={0: [("b000001", "b000000")]}))
        columns = hour.root_columns()
        assert columns.names == blocks
        found = (columns.blocks, columns.messages, columns.nodes)
        rows = list(zip(*(column.tolist() for column in found), strict=True))
        assert rows[:5] == [(0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 0, 5), (1, 1, 0)]
        assert rows == sorted(rows) and len(rows) == count + 3
