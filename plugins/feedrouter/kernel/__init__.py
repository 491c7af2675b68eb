"""Compiled kernels of the per-result hot path.

Each kernel is a C extension (Cython) doing one job the pure-Python code beside it also does; the
Python path stays the reference (the tests compare the two) and the fallback where the extension
was not built (an install without a C compiler: setup.py builds it as optional). ``FEEDROUTER_KERNEL=off``
in the environment turns the kernels off (the benchmarks measure both ways).

* :func:`plain_children`: an element's plain children by name, their string values and copies;
  :func:`plain_row`: a whole witness row read off them (witness rows, :mod:`feedrouter.join.witness`);
* :func:`first_named`: the first element of a name in a document and its pre-order id;
  :func:`first_named_text`: the same with its text (a feed's event time,
  :func:`feedrouter.join.witness.first_named_row`); :func:`all_named`: every element of
  a name (the nodes a join block of the form ``//name`` binds, :class:`feedrouter.join.witness.Walked`);
  :func:`walked_rows`: those nodes' rows read as :func:`plain_row` reads them, in the same walk;
* :func:`file_messages`: the hour's witness writer's loop over its filed messages,
  :func:`count_items` and :func:`fill_items`: its values and fragments written straight into
  arrays, and :func:`sorted_roots`: its roots by block in one counting sort
  (:mod:`feedrouter.join.relations`); :func:`keep_batch`: a routing task's batch of witness rows
  kept as flat rows of numbers (:mod:`feedrouter.join.batches`);
* :class:`Decider`: the blocks a witness row's factored tests bind, its atoms evaluated from a table
  (:func:`feedrouter.join.selections.decider`); :class:`Tests`: the same, each test read as it is
  (a key's bucket, :mod:`feedrouter.join.selections`); :func:`bind`: the loop that files a witness
  plan's rows by block through them (:meth:`feedrouter.join.selections.Served.bind`), and
  :func:`file_rows` every plan's rows of a message (:meth:`feedrouter.join.selections.WitnessPlans.file`);
* :func:`event_time`: a message's event time in its usual lexical forms, RFC 822 and ISO 8601
  (:func:`feedrouter.join.clock.parse_event_time`, whose library path decides every other form).
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

#: per name (values, copies); None where the kernel declines
PlainColumns = tuple[tuple[tuple[str, ...], bytes], ...]
PlainChildren = Callable[[Any, tuple[bytes, ...], int], PlainColumns | None]
#: a witness row read whole: (values per leaf, fragments, size)
PlainRow = tuple[tuple[tuple[str, ...], ...], tuple[bytes, ...], int]
#: (values per leaf, fragments, size); None where the kernel declines, False past the limit
PlainRowReader = Callable[
    [Any, tuple[bytes, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], int],
    PlainRow | Literal[False] | None,
]
#: (pre-order id, element) of the first element of a name in a subtree; None when there is none
FirstNamed = Callable[[Any, bytes], tuple[int, Any] | None]
#: (pre-order id, element, its text or None) of the first element of a name; None when there is none
FirstNamedText = Callable[[Any, bytes], tuple[int, Any, str | None] | None]
#: (pre-order id, element) of every element of a name in a subtree, in document order
AllNamed = Callable[[Any, bytes], list[tuple[int, Any]]]
#: (rows or None, size, work units, the rest as (pre-order id, element)): :func:`walked_rows`
WalkedRows = Callable[..., tuple[list[Any] | None, int, int, list[tuple[int, Any]]]]


def _load() -> Any:
    """The compiled reader of children, or None (not built here, or turned off)."""
    if not requested():
        return None
    try:
        from feedrouter.kernel import _children  # type: ignore[attr-defined]
    except ImportError:  # not built here: the Python path answers
        return None
    except (ValueError, TypeError) as exc:  # built against another lxml than the one imported
        warnings.warn(f"feedrouter's compiled kernel does not fit this lxml ({exc}): not used", stacklevel=2)
        return None
    return _children


def _load_plain(name: str) -> Any:
    """A compiled module that touches Python objects only (no lxml to fit), or None (not built
    here, or turned off)."""
    if not requested():
        return None
    try:
        return importlib.import_module(f"feedrouter.kernel.{name}")
    except ImportError:
        return None


def requested() -> bool:
    """Whether the environment asks for the kernels (``FEEDROUTER_KERNEL`` is not ``off``): where
    it does, a kernel that is missing was left out by the build."""
    return os.environ.get("FEEDROUTER_KERNEL", "on").lower() not in ("off", "0", "false", "no")


_compiled = _load()
_writer = _load_plain("_columns")  # the witness writer's loops
_deciding = _load_plain("_deciders")  # the deciders of a base's tests
_clock = _load_plain("_clock")  # the reader of event times
#: the compiled reader of plain children, or None (not built, or turned off)
plain_children: PlainChildren | None = None if _compiled is None else _compiled.plain_children
#: the compiled reader of whole plain rows, or None
plain_row: PlainRowReader | None = getattr(_compiled, "plain_row", None)  # None: a build from before it
#: the compiled search for the first element of a name, or None
first_named: FirstNamed | None = getattr(_compiled, "first_named", None)
#: the compiled search for the first element of a name with its text, or None
first_named_text: FirstNamedText | None = getattr(_compiled, "first_named_text", None)
#: the compiled search for every element of a name, or None
all_named: AllNamed | None = getattr(_compiled, "all_named", None)
#: the compiled walk that reads a walked block's rows, or None (a build from before it: None too)
walked_rows: WalkedRows | None = getattr(_compiled, "walked_rows", None)
#: the same walk packing its rows straight into a routing task's batch, or None
walked_into: (
    Callable[..., tuple[int | None, int, int, list[tuple[int, Any]], tuple[int, ...] | None]] | None
) = getattr(_compiled, "walked_into", None)
#: the compiled loops of the witness writer (:class:`feedrouter.join.relations.HourWitnesses`), or None
file_messages: Callable[..., None] | None = None if _writer is None else _writer.file_messages
#: the compiled counting sort of the writer's roots by block, or None (a build from before it: None too)
sorted_roots: Callable[..., None] | None = getattr(_writer, "sorted_roots", None)
#: the compiled count and fill of the writer's values or fragments as arrays, or None
count_items: Callable[..., int] | None = getattr(_writer, "count_items", None)
fill_items: Callable[..., None] | None = getattr(_writer, "fill_items", None)
#: the compiled loop that keeps a routing task's batch of witness rows (format 2), or None
keep_batch: Callable[..., None] | None = getattr(_writer, "keep_batch", None)
#: the compiled decider's class (:mod:`feedrouter.join.selections`), or None
Decider: Callable[..., Callable[[Any], list[tuple[str, ...]]]] | None = (
    None if _deciding is None else _deciding.Decider
)
#: the compiled reader of a bucket's tests as they are, or None
Tests: Callable[..., Callable[[Any], list[tuple[str, ...]]]] | None = (
    None if _deciding is None else _deciding.Tests
)
#: the compiled loop that files a plan's rows by block, or None (a build from before it: None too)
bind: Callable[..., list[Any]] | None = getattr(_deciding, "bind", None)
#: the same for every plan of a message in one call, or None
file_rows: Callable[..., None] | None = getattr(_deciding, "file_rows", None)
#: an event time in its usual form (format code: :data:`EVENT_FORMATS`) as an aware UTC datetime;
#: None for any other value (the library decides it), or None (not built, or turned off)
event_time: Callable[[str, int], Any] | None = None if _clock is None else _clock.event_time
#: the same as microseconds since the epoch (an int), or None (a build from before it: None too)
event_micros: Callable[[str, int], int | None] | None = getattr(_clock, "event_micros", None)
#: the codes :func:`event_time` knows its formats by (empty without it)
EVENT_FORMATS: dict[str, int] = {} if _clock is None else {"rfc822": _clock.RFC822, "iso8601": _clock.ISO8601}
#: the decider's kinds of atom by name (empty without it)
ATOM_KINDS: dict[str, int] = {} if _deciding is None else dict(_deciding.KINDS)


#: the module's names of the kernels (:func:`turned_off` sets them all to None)
_KERNELS = (
    "plain_children",
    "plain_row",
    "first_named",
    "first_named_text",
    "all_named",
    "walked_rows",
    "file_messages",
    "sorted_roots",
    "count_items",
    "fill_items",
    "keep_batch",
    "walked_into",
    "Decider",
    "Tests",
    "bind",
    "file_rows",
    "event_time",
    "event_micros",
)


@contextmanager
def turned_off() -> Iterator[None]:
    """The kernels off for the block: the Python paths answer (the benchmarks measure both)."""
    module = globals()
    kept = {name: module[name] for name in _KERNELS}
    module.update(dict.fromkeys(_KERNELS))
    try:
        yield
    finally:
        module.update(kept)
