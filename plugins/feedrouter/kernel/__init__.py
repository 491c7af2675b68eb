"""Compiled kernels of the per-result hot path.

Each kernel is a C extension (Cython) doing one job the pure-Python code beside it also does; the
Python path stays the reference (the tests compare the two) and the fallback where the extension
was not built (an install without a C compiler: setup.py builds it as optional). ``FEEDROUTER_KERNEL=off``
in the environment turns the kernels off (the benchmarks measure both ways).

* :func:`plain_children`: an element's plain children by name, their string values and copies
  (witness rows, :mod:`feedrouter.join.witness`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: per name (values, copies); None where the kernel declines
PlainColumns = tuple[tuple[tuple[str, ...], bytes], ...]
PlainChildren = Callable[[Any, tuple[bytes, ...], int], PlainColumns | None]


def _load() -> PlainChildren | None:
    if os.environ.get("FEEDROUTER_KERNEL", "on").lower() in ("off", "0", "false", "no"):
        return None
    try:
        from feedrouter.kernel._children import plain_children as compiled
    except ImportError:  # not built here: the Python path answers
        return None
    except (ValueError, TypeError) as exc:  # built against another lxml than the one imported
        warnings.warn(f"feedrouter's compiled kernel does not fit this lxml ({exc}): not used", stacklevel=2)
        return None
    return compiled


#: the compiled reader of plain children, or None (not built, or turned off)
plain_children: PlainChildren | None = _load()


@contextmanager
def turned_off() -> Iterator[None]:
    """The kernels off for the block: the Python paths answer (the benchmarks measure both)."""
    global plain_children
    kept, plain_children = plain_children, None
    try:
        yield
    finally:
        plain_children = kept
