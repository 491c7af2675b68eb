"""A per-operator cost breakdown (like paper 000, Table 2), measured as exclusive time.

Operators nest (a semijoin runs its right-hand plan), so each measurement subtracts the time of the
measurements inside it: the categories add up to the total.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class Profiler:
    """Exclusive seconds per category, accumulated over any number of documents."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._inner: list[float] = []

    @contextmanager
    def measure(self, category: str) -> Iterator[None]:
        self._inner.append(0.0)
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            inner = self._inner.pop()
            self.seconds[category] += elapsed - inner
            self.calls[category] += 1
            if self._inner:
                self._inner[-1] += elapsed

    def table(self) -> list[tuple[str, float, int]]:
        """(category, seconds, calls), most expensive first."""
        return sorted(((c, s, self.calls[c]) for c, s in self.seconds.items()), key=lambda r: -r[1])
