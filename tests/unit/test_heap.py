"""Settling the heap: frozen while routing, handed back to the collector afterwards."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from feedrouter import heap


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()  # whatever an earlier test in this process settled
    yield
    gc.unfreeze()


def test_settled_freezes_for_the_outermost_block_only() -> None:
    assert gc.get_freeze_count() == 0
    with heap.settled():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with heap.settled():
            assert gc.get_freeze_count() > frozen // 2
        # the inner block left it to the outer one (frozen objects may still die by refcount)
        assert gc.get_freeze_count() > frozen // 2
    assert gc.get_freeze_count() == 0


def test_settled_releases_the_heap_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), heap.settled():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    with heap.settled():  # and the next block settles again
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_settled_cycle_is_collected_once_released() -> None:
    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    with heap.settled():
        del a, b
        gc.collect()
        assert alive() is not None  # frozen: out of the collector's reach
    gc.collect()
    assert alive() is None


def test_paused_stops_the_collector_and_restores_it_as_it_was() -> None:
    assert gc.isenabled()
    with heap.paused():
        assert not gc.isenabled()
        with heap.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as it found it
    assert gc.isenabled()
    gc.disable()
    try:
        with heap.paused():
            pass
        assert not gc.isenabled()  # paused by someone else before: left paused
    finally:
        gc.enable()
