"""The compiled loops of the witness writer (feedrouter.kernel): they fill the writer's lists exactly
as its Python loops do (:mod:`feedrouter.join.relations`), numbering included."""

from __future__ import annotations

import random

import pytest

from feedrouter import kernel
from feedrouter.join.relations import MessageWitnesses, _FiledRoots, _NamedColumnsBuilder
from tests.unit.spark.test_witnesses import filed_messages

needs_kernel = pytest.mark.skipif(
    kernel.file_messages is None, reason="the compiled kernel is turned off or not built"
)


def test_the_writer_kernel_is_built_here() -> None:
    """Built by the project's own files, as the reader of children is (an optional build that
    failed quietly would leave every hour's writer on the slow path)."""
    if not kernel.requested():
        pytest.skip("turned off here")
    assert kernel.file_messages is not None and kernel.name_rows is not None


def _filed(messages: list[MessageWitnesses]) -> tuple[dict, list, list]:
    roots, rows = _FiledRoots(), []  # type: ignore[var-annotated]
    roots.file(list(enumerate(messages)), rows)
    lists = [roots.hits, roots.counts, roots.messages, roots.nodes]
    return dict(roots.numbers), lists, rows


def _named(rows: list, side: int) -> list:
    builder = _NamedColumnsBuilder(side)
    builder.add_rows(rows)
    return [builder.codes, builder.names, builder.name, builder.items, builder.messages, builder.nodes]


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
    assert kernel.name_rows is not None
    lists: list[list] = [[], [], [], []]
    with pytest.raises(IndexError):
        kernel.name_rows([(0, [((("a",), ()), (3,))])], 0, {}, {}, *lists)
    with pytest.raises(IndexError):
        kernel.name_rows([(0, [((("a",),),)])], 0, {}, {}, *lists)
    with pytest.raises(ValueError, match="side"):
        kernel.name_rows([], 2, {}, {}, *lists)
