"""The compiled loops of the witness writer (feedrouter.kernel): they fill the writer's lists exactly
as its Python loops do (:mod:`feedrouter.join.relations`), numbering included."""

from __future__ import annotations

import random
from array import array
from typing import Any

import numpy as np
import pytest

from feedrouter import kernel
from feedrouter.join import batches
from feedrouter.join.relations import (
    MessageRef,
    MessageWitnesses,
    NamedColumns,
    RootColumns,
    _counted_roots,
    _FiledRoots,
    _NamedColumnsBuilder,
    _sorted_roots,
)
from feedrouter.join.witness import WitnessRow
from tests.unit.join.test_batches import plans_and_hour
from tests.unit.spark.test_witnesses import filed_messages

needs_kernel = pytest.mark.skipif(
    kernel.file_messages is None, reason="the compiled kernel is turned off or not built"
)


def test_the_writer_kernel_is_built_here() -> None:
    """Built by the project's own files, as the reader of children is (an optional build that
    failed quietly would leave every hour's writer on the slow path)."""
    if not kernel.requested():
        pytest.skip("turned off here")
    assert kernel.file_messages is not None
    assert kernel.sorted_roots is not None
    assert kernel.count_items is not None and kernel.fill_items is not None


def _filed(messages: list[MessageWitnesses]) -> tuple[dict, list, list]:
    roots, rows = _FiledRoots(), []  # type: ignore[var-annotated]
    roots.file(list(enumerate(messages)), rows)
    lists = [roots.hits, roots.counts, roots.messages, roots.nodes]
    return dict(roots.numbers), lists, rows


def _named(rows: list, side: int) -> list:
    builder = _NamedColumnsBuilder(side)
    builder.add_rows(rows)
    found = builder.columns()
    columns = [found.names, found.name.tolist(), found.items, found.messages.tolist(), found.nodes.tolist()]
    return [builder.codes, builder.names, *columns]


@needs_kernel
@pytest.mark.parametrize("seed", range(8))
def test_the_compiled_loops_fill_what_the_python_loops_do(seed: int) -> None:
    messages = filed_messages(random.Random(seed), 30)
    compiled = _filed(messages)
    compiled_named = [_named(compiled[2], side) for side in (0, 1)]
    with kernel.turned_off():
        python = _filed(messages)
        python_named = [_named(python[2], side) for side in (0, 1)]
    assert compiled == python
    assert compiled_named == python_named
    assert sum(python[1][1]) == sum(len(groups) for m in messages for groups in m.bound.values())


@needs_kernel
def test_a_row_with_items_for_other_names_is_refused_both_ways() -> None:
    """A row whose items do not match its names (never filed so: a plan's rows have its names'
    columns) raises, compiled or not, rather than naming items wrongly."""
    messages = filed_messages(random.Random(1), 5)
    names, row = next(m.rows[0] for m in messages if m.rows)
    bad = [(0, [(names, row._replace(fragments=(*row.fragments, b"<x/>")))])]
    with pytest.raises(ValueError):
        _NamedColumnsBuilder(1).add_rows(bad)
    with kernel.turned_off(), pytest.raises(ValueError):
        _NamedColumnsBuilder(1).add_rows(bad)


@needs_kernel
def test_the_compiled_loops_read_any_sequences_the_python_loops_do() -> None:
    """Filed messages are read through the object protocols, not as lists and tuples only: groups
    in a tuple, a row's values in lists (never filed so today) give what the Python loops give."""
    messages = filed_messages(random.Random(3), 20)
    for message in messages:
        message.bound = {node: tuple(groups) for node, groups in message.bound.items()}  # type: ignore[misc]
        message.rows = [
            (names, row._replace(values=[list(values) for values in row.values]))  # type: ignore[arg-type]
            for names, row in message.rows
        ]
    compiled = _filed(messages)
    compiled_named = [_named(compiled[2], side) for side in (0, 1)]
    with kernel.turned_off():
        python = _filed(messages)
        python_named = [_named(python[2], side) for side in (0, 1)]
    assert compiled == python and compiled_named == python_named


@needs_kernel
def test_the_compiled_loops_refuse_numbers_that_are_not_a_dict() -> None:
    assert kernel.file_messages is not None
    with pytest.raises(TypeError, match="must be a dict"):
        kernel.file_messages([], [], [], [], [], [], [])


@needs_kernel
def test_the_compiled_loops_refuse_short_rows_and_unknown_sides() -> None:
    """Indexes are checked: a row or pair too short raises, never reads past its items."""
    assert kernel.count_items is not None and kernel.fill_items is not None
    for filed in ([(0, [((("a",), ()), (3,))])], [(0, [((("a",),),)])]):
        with pytest.raises(IndexError):
            kernel.count_items(filed, 0)
        with pytest.raises(IndexError):
            kernel.fill_items(filed, 0, {}, {}, *_arrays(1))
    with pytest.raises(ValueError, match="side"):
        kernel.fill_items([], 2, {}, {}, *_arrays(0))


def _in_stream_order(messages: list[MessageWitnesses]) -> list[MessageWitnesses]:
    """The messages with each one's nodes filed in document order (as one plan's rows file them)."""
    for message in messages:
        message.bound = dict(sorted(message.bound.items()))
    return messages


def _roots_both_ways(messages: list[MessageWitnesses]) -> tuple[RootColumns, RootColumns]:
    filed = _FiledRoots()
    filed.file(list(enumerate(messages)), [])
    compiled = _sorted_roots({}, filed)
    with kernel.turned_off():
        return compiled, _sorted_roots({}, filed)


def _same_roots(one: RootColumns, other: RootColumns) -> bool:
    return one.names == other.names and all(
        np.array_equal(getattr(one, column), getattr(other, column))
        for column in ("starts", "blocks", "messages", "nodes")
    )


@needs_kernel
@pytest.mark.parametrize("seed", range(8))
def test_the_counting_sort_gives_the_array_paths_roots(seed: int) -> None:
    """Roots filed in stream order take the compiled counting sort (checked: it answered), and
    give the rows, order and starts the array path gives, a block twice in a node's groups
    included."""
    messages = _in_stream_order(filed_messages(random.Random(seed), 40))
    filed = _FiledRoots()
    filed.file(list(enumerate(messages)), [])
    groups = list(filed.numbers)
    names = sorted({block for group in groups for block in group})
    rank = {name: at for at, name in enumerate(names)}
    members = np.array([rank[block] for group in groups for block in group], np.int64)
    sizes = np.array([len(group) for group in groups], np.int64)
    assert _counted_roots(names, members, sizes, filed) is not None
    compiled, python = _roots_both_ways(messages)
    assert _same_roots(compiled, python)
    bound = [group for message in messages for groups in message.bound.values() for group in groups]
    assert len(compiled.blocks) == sum(map(len, bound))


@needs_kernel
def test_roots_filed_out_of_stream_order_take_the_array_path() -> None:
    """Two plans' rows can file a message's nodes out of document order: the counting sort (stable
    in filing order) would keep that order, so the array path sorts them, with the same result."""
    messages = filed_messages(random.Random(5), 40)
    assert any(list(m.bound) != sorted(m.bound) for m in messages)
    filed = _FiledRoots()
    filed.file(list(enumerate(messages)), [])
    assert _counted_roots([], np.zeros(0, np.int64), np.zeros(0, np.int64), filed) is None
    compiled, python = _roots_both_ways(messages)
    assert _same_roots(compiled, python)
    keys = compiled.messages * 1000 + compiled.nodes
    for at in range(len(compiled.names)):
        run = keys[compiled.starts[at] : compiled.starts[at + 1]]
        assert list(run) == sorted(run)


@needs_kernel
def test_an_hour_without_roots_sorts_to_no_rows() -> None:
    compiled, python = _roots_both_ways([MessageWitnesses(MessageRef("m", 0, None))])
    assert _same_roots(compiled, python) and len(compiled.blocks) == 0 and compiled.names == []


def _sort_arguments(**changed: object) -> dict[str, object]:
    """A well-formed call of the counting sort (one node bound by group 0, blocks 0 and 1), with
    ``changed`` replacing some of its arguments."""
    arguments: dict[str, object] = {
        "members": np.array([0, 1], np.int64),
        "firsts": np.array([0, 2], np.int64),
        "hits": np.array([0], np.int64),
        "counts": np.array([1], np.int64),
        "messages": np.array([0], np.int64),
        "nodes": np.array([3], np.int64),
        "starts": np.zeros(3, np.int64),
        "blocks": np.empty(2, np.int64),
        "out_messages": np.empty(2, np.int64),
        "out_nodes": np.empty(2, np.int64),
    }
    arguments.update(changed)
    return arguments


@needs_kernel
def test_the_counting_sort_fills_its_columns() -> None:
    assert kernel.sorted_roots is not None
    arguments = _sort_arguments()
    kernel.sorted_roots(*arguments.values())
    assert list(arguments["starts"]) == [0, 1, 2]  # type: ignore[call-overload]
    assert list(arguments["blocks"]) == [0, 1]  # type: ignore[call-overload]
    assert list(arguments["out_nodes"]) == [3, 3]  # type: ignore[call-overload]


@needs_kernel
@pytest.mark.parametrize(
    ("changed", "error"),
    [
        ({"members": np.array([0, 5], np.int64)}, ValueError),  # a rank past the names
        ({"members": np.array([0, -1], np.int64)}, ValueError),
        ({"hits": np.array([1], np.int64)}, IndexError),  # a group that is not there
        ({"hits": np.array([0, 0], np.int64)}, ValueError),  # counts not adding up to the hits
        ({"counts": np.array([2], np.int64)}, IndexError),  # more groups than hits
        ({"counts": np.array([-1], np.int64)}, ValueError),
        ({"firsts": np.array([0, 9], np.int64)}, IndexError),  # a group's run past the members
        ({"starts": np.ones(3, np.int64)}, ValueError),
        ({"starts": np.zeros(0, np.int64)}, ValueError),
        ({"blocks": np.empty(5, np.int64)}, ValueError),  # columns not as long as the rows
        ({"out_nodes": np.empty(1, np.int64)}, ValueError),
        ({"messages": np.array([0, 1], np.int64)}, ValueError),  # an entry per node
        ({"nodes": np.array([0.5])}, ValueError),  # not 64-bit integers
    ],
)
def test_the_counting_sort_refuses_arrays_that_do_not_fit(changed: dict, error: type[Exception]) -> None:
    """Every index is checked: arrays that do not fit one another raise, never read or write
    memory the sort does not own."""
    assert kernel.sorted_roots is not None
    with pytest.raises(error):
        kernel.sorted_roots(*_sort_arguments(**changed).values())


def _columns_both_ways(messages: list[MessageWitnesses], side: int) -> tuple[NamedColumns, NamedColumns]:
    rows: list = []
    _FiledRoots().file(list(enumerate(messages)), rows)
    compiled = _NamedColumnsBuilder(side)
    compiled.add_rows(rows)
    assert compiled.chunks  # the kernel wrote them
    with kernel.turned_off():
        python = _NamedColumnsBuilder(side)
        python.add_rows(rows)
        assert not python.chunks
        return compiled.columns(), python.columns()


def _same_columns(one: NamedColumns, other: NamedColumns) -> bool:
    return (
        one.names == other.names
        and one.items == other.items
        and all(
            np.array_equal(getattr(one, column), getattr(other, column))
            for column in ("name", "messages", "nodes")
        )
        and all(getattr(one, column).dtype == np.int64 for column in ("name", "messages", "nodes"))
    )


@needs_kernel
@pytest.mark.parametrize("side", [0, 1])
@pytest.mark.parametrize("seed", range(6))
def test_the_filled_arrays_hold_what_the_python_builder_makes(seed: int, side: int) -> None:
    """Values (a row per value of a leaf, none for a leaf without one) and fragments (a row per
    fragment) written straight into arrays: the same rows, order and name numbers as the Python
    builder's lists."""
    compiled, python = _columns_both_ways(filed_messages(random.Random(seed), 30), side)
    assert _same_columns(compiled, python)


@needs_kernel
def test_an_hour_without_rows_fills_no_columns() -> None:
    for side in (0, 1):
        compiled, python = _columns_both_ways([MessageWitnesses(MessageRef("m", 0, None))], side)
        assert _same_columns(compiled, python) and compiled.names == [] and len(compiled.name) == 0


@needs_kernel
def test_the_fill_refuses_rows_that_do_not_fit() -> None:
    """A row whose items do not match its names raises in the count and in the fill, as the Python
    builder does; arrays shorter or longer than the rows raise, never write past their end or leave
    entries unwritten."""
    assert kernel.count_items is not None and kernel.fill_items is not None
    messages = filed_messages(random.Random(1), 5)
    names, row = next(m.rows[0] for m in messages if m.rows)
    bad = [(0, [(names, row._replace(fragments=(*row.fragments, b"<x/>")))])]
    with pytest.raises(ValueError, match="items for"):
        kernel.count_items(bad, 1)
    with pytest.raises(ValueError, match="items for"):
        kernel.fill_items(bad, 1, {}, {}, *_arrays(9))
    good = [(0, [(names, row)])]
    size = kernel.count_items(good, 1)
    assert size == len(row.fragments)
    with pytest.raises(IndexError):
        kernel.fill_items(good, 1, {}, {}, *_arrays(size - 1))
    with pytest.raises(ValueError, match="rows for arrays"):
        kernel.fill_items(good, 1, {}, {}, *_arrays(size + 1))
    with pytest.raises(ValueError, match="side"):
        kernel.count_items(good, 2)
    with pytest.raises(ValueError, match="an entry per row"):
        kernel.fill_items(
            good,
            1,
            {},
            {},
            np.empty(size, np.int64),
            [],
            np.empty(size + 2, np.int64),
            np.empty(size, np.int64),
        )


def _arrays(size: int) -> tuple:
    """``name``, ``items``, ``messages`` and ``nodes`` for :func:`feedrouter.kernel.fill_items`."""
    return np.empty(size, np.int64), [], np.empty(size, np.int64), np.empty(size, np.int64)


@needs_kernel
@pytest.mark.parametrize("side", [0, 1])
def test_rows_added_one_by_one_and_filled_keep_their_order(side: int) -> None:
    """Nodes added one at a time before and after a filled batch (an hour whose values were named
    and then more messages filed) come out in the order they were added, compiled or not."""
    rows: list = []
    _FiledRoots().file(list(enumerate(filed_messages(random.Random(2), 20))), rows)
    one = (("author", "@lang"), (("ann",), ("en", "de"))) if side == 0 else (("nodes  author",), (b"<a/>",))

    def built() -> NamedColumns:
        builder = _NamedColumnsBuilder(side)
        builder.add(90, 1, *one)
        builder.add_rows(rows[:5])
        builder.add(91, 2, *one)
        builder.add_rows(rows[5:])
        return builder.columns()

    compiled = built()
    with kernel.turned_off():
        python = built()
    assert _same_columns(compiled, python)
    assert compiled.messages[0] == 90 and 91 in compiled.messages.tolist()


@needs_kernel
def test_the_compiled_batch_loop_fills_what_its_reference_fills() -> None:
    """A routing task's batch (format 2) as :func:`~feedrouter.kernel.keep_batch` keeps it: what
    its Python reference keeps; a message without rows adds nothing, a plan another build serves
    is left out, a row that does not fit its plan's names is refused by both."""
    plans, witnesses = plans_and_hour(7, 30)
    witnesses[3] = {}
    witnesses[4] = {"another build's plan": next(iter(witnesses[5].values())), **witnesses[4]}
    names = {plan: plans.names(plan) for plan in plans.served}
    plan, rows = next((p, r) for p, r in witnesses[6].items() if p in names and r and r[0].values)
    first = rows[0]  # a value beyond ASCII: its UTF-8 is packed, not its characters
    witnesses[6] = {
        **witnesses[6],
        plan: [first._replace(values=(("Zürich ✓", ""), *first.values[1:])), *rows[1:]],
    }
    filled = []
    for keep in (kernel.keep_batch, batches._keep_batch):
        lists: tuple[Any, ...] = ({}, {}, {}, {}, *_kept_arrays())
        assert keep is not None
        keep(witnesses, names, *lists)
        filled.append(lists[1:])
        plan = next(iter(names))
        broken = [{plan: [WitnessRow(1, (), ())]}]
        with pytest.raises(ValueError, match="does not have its plan's leaves"):
            keep(broken, names, {}, {}, {}, {}, *_kept_arrays())
    assert filled[0] == filled[1] and filled[0][3]
    # the values and fragments packed end to end: each item where its end says
    _, _, _, _, value_rows, data, ends, _, fragments, fragment_ends = filled[0]
    assert len(ends) == len(value_rows) // 4 and ends[-1] == len(data)
    kept_values = [bytes(data[start:end]).decode() for start, end in zip([0, *ends], ends, strict=False)]
    served = [row for found in witnesses for plan, rows in found.items() if plan in names for row in rows]
    expected = [value for row in served for leaf in row.values for value in leaf]
    assert kept_values == expected and not all(value.isascii() for value in expected)
    expected_fragments = [fragment for row in served for fragment in row.fragments]
    assert len(fragment_ends) == len(expected_fragments)
    assert bytes(fragments) == b"".join(expected_fragments)


def _kept_arrays() -> tuple[array[int], ...]:
    """The arrays a batch is kept in (:meth:`~feedrouter.join.batches.BatchBuilder.batch`)."""
    return tuple(array(code) for code in "qqBqqBq")


@needs_kernel
@pytest.mark.parametrize("bad", ["value", "fragment"])
def test_the_compiled_batch_loop_refuses_an_item_of_another_type(bad: str) -> None:
    """A value that is not a string or a fragment that is not bytes raises TypeError, as
    encoding or packing it in Python does, and an array of another type code is refused."""
    names = {"plan": (("author",), ("title",))}
    row = WitnessRow(1, (("a value",),), (b"<title/>",))
    for keep in (kernel.keep_batch, batches._keep_batch):
        assert keep is not None
        kept = _kept_arrays()
        keep([{"plan": [row]}], names, {}, {}, {}, {}, *kept)
        assert bytes(kept[2]) == b"a value" and bytes(kept[5]) == b"<title/>"
        not_text: Any = ((b"not a string",),) if bad == "value" else row.values  # wrong on purpose
        not_bytes: Any = ("str",) if bad == "fragment" else row.fragments
        wrong = row._replace(values=not_text, fragments=not_bytes)
        with pytest.raises((TypeError, AttributeError)):
            keep([{"plan": [wrong]}], names, {}, {}, {}, {}, *_kept_arrays())
    arrays = list(_kept_arrays())
    arrays[2 if bad == "value" else 5] = array("q")
    assert kernel.keep_batch is not None
    with pytest.raises(TypeError, match="array\\('B'\\)"):
        kernel.keep_batch([{"plan": [row]}], names, {}, {}, {}, {}, *arrays)
