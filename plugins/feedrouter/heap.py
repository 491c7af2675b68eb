"""Keep a compiled router out of the garbage collector's full passes while a process routes.

A compiled router is millions of long-lived Python objects (plans, patterns, index entries).
Routing allocates and frees many short-lived ones, and every so often that triggers a full
collection, which walks the whole heap: about a quarter of a second for 10,000 Book subscriptions.
Measured on the Book workload at 10,000 subscriptions, that is about a fifth of the routing time.
``gc.freeze()`` moves the objects that exist now to a generation that collections skip. Young garbage
is still collected, and frozen objects are still freed when their last reference goes.

Processes that load one router and route many documents with it settle the heap after loading it:
the ``feedrouter route`` command, local hour runs and the Spark routing tasks. Release it before
dropping the router, or reference cycles inside it would never be collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0  # open settled() blocks: only the outermost one freezes and releases


def settle() -> None:
    """Collect once, then keep everything alive now out of later collections."""
    gc.collect()
    gc.freeze()


def release() -> None:
    """Hand the frozen objects back to the collector (before dropping a settled router)."""
    gc.unfreeze()


@contextmanager
def settled() -> Iterator[None]:
    """Settle the heap for the block (nested blocks leave it to the outermost)."""
    global _depth
    _depth += 1
    if _depth == 1:
        settle()
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            release()


@contextmanager
def paused(*, keep: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of objects are made at once.

    A plan of 100,000 subscriptions is millions of small objects; with the collector running,
    unpickling it spends most of its time in repeated full collections (27 s instead of about 3 s),
    and a join stage's hour of pairs the same (grouping 18,000 join plans: 0.5 s, 0.02 s paused).
    Nothing made there is garbage yet, so pausing loses nothing.

    With ``keep``, what exists at the end is frozen (:func:`settle` without its collection): the
    caller keeps what the block made, and the first young collection after it would otherwise
    walk all of it (a join stage's hour of 300 million pairs: 15 s). :func:`release` hands it
    back; unreleased, it is still freed when its last reference goes (only reference cycles
    among it wait for a release).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if was_enabled:
            gc.enable()
