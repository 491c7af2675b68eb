"""What the message factory reads of a routed document: the seam between ``plan`` and ``output``.

The factory serializes the nodes that plans selected, but it needs no plan to do so: only the
document's nodes by id, each node's serialization (built once per document), the per-document table
of slot bytes that every plan returning the same slot shares, and the profiler of the run, if any.
:class:`DocumentView` names exactly that; :class:`feedrouter.plan.context.DocumentContext` implements
it. So ``output`` (which compiles templates for the planner) imports nothing of ``plan``, and the two
packages depend one way only: ``plan`` on ``output``.

A slot's items are chosen by the plan that owns it (a return item): the factory hands the same view
back to it through :class:`SlotItems`, without knowing what else the view holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from lxml import etree

TextRef = tuple[int, int]  # (element id, index of the text node among the element's text children)
Item = int | TextRef | bytes  # an element by id, one text node of an element, or built bytes

#: One document's slot bytes: ``(slot ref, binding)`` to the serialized items of that slot for that
#: bound node. Refs are interned by the planner, so equal slots of different plans share entries.
SlotBytes = dict[tuple[object, int], bytes]


class ElementsById(Protocol):
    """The document's elements indexed by element id (document order); the engine makes each
    element object on first need (:class:`feedrouter.engine.runtime.Nodes`)."""

    def __getitem__(self, nid: int, /) -> etree._Element: ...

    def __len__(self) -> int: ...


class Measurer(Protocol):
    """Times a category of work (:class:`feedrouter.plan.profile.Profiler`)."""

    def measure(self, category: str) -> AbstractContextManager[object]:
        """A context manager charging the time spent inside it to ``category``."""
        ...


class DocumentView(Protocol):
    """The per-document state the message factory reads and fills."""

    @property
    def nodes(self) -> ElementsById:
        """The document's elements, indexed by element id (document order)."""
        ...

    @property
    def profiler(self) -> Measurer | None:
        """The profiler of a profiled run, or None."""
        ...

    @property
    def slot_bytes(self) -> SlotBytes:
        """The document's slot bytes, filed by the factory as it builds them."""
        ...

    def serialized(self, nid: int) -> bytes:
        """Element ``nid`` serialized as XML, built at most once per document."""
        ...


class SlotItems(Protocol):
    """The plan side of one slot: which items it holds for a bound node.

    ``ctx`` is the :class:`DocumentView` given to the factory, handed back unchanged (typed
    ``Any`` so that the plan may declare the concrete context it implements the view with).
    """

    def select(self, ctx: Any, bound: int) -> Sequence[Item]:
        """The slot's items for the binding ``bound``."""
        ...

    def items(self, ctx: Any, bound: int) -> Sequence[Item]:
        """:meth:`select`, timed under the plan's own category when ``ctx`` has a profiler."""
        ...


class SlotRef(Protocol):
    """A resolved slot of a flattened template: whose items, under which default namespace."""

    @property
    def item(self) -> SlotItems: ...

    @property
    def default_ns(self) -> str: ...
