"""A per-operator cost breakdown (like paper 000, Table 2), measured as exclusive time.

Operators nest (a semijoin runs its right-hand plan), so each measurement subtracts the time of the
measurements inside it: the categories add up to the total.

Python's cyclic garbage collector runs whenever allocations trigger it, and a full collection walks
every object the compiled router holds (a quarter of a second for 10,000 Book subscriptions). Left
alone it would be charged to whichever operator happened to allocate, so while :meth:`Profiler.collecting`
is on, collections are timed as their own category, ``garbage collection``, and taken out of the
operator they interrupted.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

GARBAGE_COLLECTION = "garbage collection"


class Profiler:
    """Exclusive seconds per category, accumulated over any number of documents.

    ``measure(category)`` is entered tens of thousands of times per document on large populations,
    and what it costs outside its own timed window lands in the enclosing category: it hands out one
    reusable context manager per category and keeps its state on a stack, so that cost stays small.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        # per open measurement: when it started, and the seconds of the measurements inside it (two
        # lists of floats: a list per entry would be a container for the garbage collector to
        # count, and a collection triggered in here would be charged to whatever runs)
        self._started: list[float] = []
        self._inner: list[float] = []
        self._measures: dict[str, _Measure] = {}
        self._collection_started = 0.0

    def measure(self, category: str) -> _Measure:
        found = self._measures.get(category)
        if found is None:
            found = self._measures[category] = _Measure(self, category)
        return found

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Time garbage collections as their own category while inside this block."""
        gc.callbacks.append(self._on_collection)
        try:
            yield
        finally:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collection_started = perf_counter()
            return
        elapsed = perf_counter() - self._collection_started
        self.seconds[GARBAGE_COLLECTION] += elapsed
        self.calls[GARBAGE_COLLECTION] += 1
        if self._inner:  # not the interrupted operator's time
            self._inner[-1] += elapsed

    def table(self) -> list[tuple[str, float, int]]:
        """(category, seconds, calls), most expensive first."""
        return sorted(((c, s, self.calls[c]) for c, s in self.seconds.items()), key=lambda r: -r[1])


class _Measure:
    """Times one category; reentrant, as the state of each entry lives on the profiler's stack."""

    __slots__ = ("category", "profiler")

    def __init__(self, profiler: Profiler, category: str) -> None:
        self.profiler = profiler
        self.category = category

    def __enter__(self) -> None:
        self.profiler._inner.append(0.0)
        self.profiler._started.append(perf_counter())

    def __exit__(self, *exc: object) -> None:
        ended = perf_counter()
        profiler = self.profiler
        elapsed = ended - profiler._started.pop()
        inner = profiler._inner
        profiler.seconds[self.category] += elapsed - inner.pop()
        profiler.calls[self.category] += 1
        if inner:
            inner[-1] += elapsed
