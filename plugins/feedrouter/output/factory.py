"""The message factory: groupSequence-listSequence results to the bytes a subscriber receives.

The serialization is XQuery's for the result: UTF-8, no XML declaration, no indentation, copied
nodes with their in-scope namespaces, constructed elements declaring the namespaces they use.
Constructor templates are compiled once into byte fragments; per document only the selected nodes
are serialized (each at most once, by the document's view: :class:`~feedrouter.output.view.DocumentView`,
all the factory reads of a routed document, so that this package needs nothing of ``plan``).

A result is assembled within a byte limit (:func:`render_items_within`, :func:`assemble_within`):
the size is checked after each piece, so a result past its limit is given up after building at most
the limit plus one piece (one node's serialization), never built whole first.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from lxml import etree

from feedrouter.lang import ast
from feedrouter.output.view import DocumentView, Item, SlotRef


def escape_text(text: str) -> bytes:
    """Escape character data as XML serialization does (``\\r`` kept as a reference)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    return escaped.encode("utf-8")


def _escape_attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def serialized_attribute(value: str) -> str:
    """An attribute value as the XML serializer writes it: whitespace that normalization would
    change is kept as character references."""
    return _escape_attribute(value).replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")


@dataclass(frozen=True)
class Slot:
    """Where the nodes of return path ``index`` go; ``default_ns`` is the default namespace in scope.
    ``value``: the path's atomized values joined by spaces go there (an attribute value template)."""

    index: int
    default_ns: str = ""
    value: bool = False


@dataclass(frozen=True)
class ElementTemplate:
    """A constructed element: its tags as bytes and its content (templates, slots, literal bytes)."""

    start: bytes
    end: bytes
    empty: bytes
    content: tuple[ElementTemplate | Slot | bytes, ...] = field(default=())
    # a start tag with attribute value templates or attribute slots, built per binding
    head: tuple[Slot | bytes, ...] = field(default=())


Template = ElementTemplate | Slot


class _Scope:
    """Namespace bindings in scope among constructed elements, to declare each one where it starts."""

    def __init__(self, bindings: dict[str, str] | None = None) -> None:
        self.bindings = dict(bindings or {})

    def open(self, name: ast.QName) -> tuple[str, _Scope]:
        """The declarations ``name`` needs here, and the scope for its content."""
        prefix = name.prefix if name.uri else ""
        if prefix == "xml" or self.bindings.get(prefix, "") == name.uri:
            return "", self
        attr = f"xmlns:{prefix}" if prefix else "xmlns"
        inner = _Scope(self.bindings)
        inner.bindings[prefix] = name.uri
        return f' {attr}="{_escape_attribute(name.uri)}"', inner

    def declare(self, prefix: str, uri: str) -> tuple[str, _Scope]:
        """A namespace declaration written on a constructor (``xmlns:p="uri"``), unless already in scope."""
        return self.open(ast.QName(uri, "", prefix)) if prefix or uri else self._undeclare_default()

    def _undeclare_default(self) -> tuple[str, _Scope]:
        if not self.bindings.get(""):
            return "", self
        inner = _Scope(self.bindings)
        inner.bindings[""] = ""
        return ' xmlns=""', inner

    def start(self, ctor: ast.Constructor) -> tuple[str, _Scope]:
        """The declarations a constructed element's start tag needs (those written on it, then its
        name's and its attributes' namespaces when not in scope), and the scope of its content."""
        declarations, inner = "", self
        for prefix, uri in ctor.namespaces:
            more, inner = inner.declare(prefix, uri)
            declarations += more
        more, inner = inner.open(ctor.name)
        declarations += more
        for attribute in ctor.attributes:
            if attribute.name.uri:
                more, inner = inner.open(attribute.name)
                declarations += more
        return declarations, inner


def compile_constructor(
    ctor: ast.Constructor, slots: list[ast.RelPath], scope: _Scope | None = None
) -> ElementTemplate:
    """Compile a constructor; each enclosed path is appended to ``slots`` and gets its index.

    Attribute value templates and ``{ $v/@id }`` attribute slots make the start tag a sequence of
    bytes and slots (``head``), built per binding."""
    scope = scope or _Scope()
    qname = str(ctor.name)
    declarations, inner = scope.start(ctor)
    head: list[Slot | bytes] = [f"<{qname}{declarations}".encode()]
    for attribute in ctor.attributes:
        head.append(f' {attribute.name}="'.encode())
        for part in attribute.parts:
            if isinstance(part, str):
                head.append(serialized_attribute(part).encode())
            else:
                slots.append(part.paths[0])  # the parser allows one path per enclosed value
                head.append(Slot(len(slots) - 1, value=True))
        head.append(b'"')
    content: list[ElementTemplate | Slot | bytes] = []
    for item in ctor.content:
        if isinstance(item, ast.Constructor):
            content.append(compile_constructor(item, slots, inner))
        elif isinstance(item, ast.TextContent):
            content.append(escape_text(item.text))
        elif isinstance(item, ast.CommentContent):
            content.append(f"<!--{item.text}-->".encode())
        else:
            for path in item.paths:
                slots.append(path)
                slot = Slot(len(slots) - 1, inner.bindings.get("", ""))
                (head if isinstance(path.tail, ast.AttributeTest) else content).append(slot)
    constant = all(isinstance(part, bytes) for part in head)
    opened = b"".join(p for p in head if isinstance(p, bytes))
    return ElementTemplate(
        start=opened + b">",
        end=f"</{qname}>".encode(),
        empty=opened + b"/>",
        content=tuple(content),
        head=() if constant else (*head, b">"),
    )


def value_slots(template: Template) -> set[int]:
    """The indexes of the slots that hold attribute values (atomized, joined), not nodes."""
    if isinstance(template, Slot):
        return {template.index} if template.value else set()
    found = {part.index for part in template.head if isinstance(part, Slot) and part.value}
    for part in template.content:
        if not isinstance(part, bytes):
            found |= value_slots(part)
    return found


def attribute_value(values: Sequence[str]) -> bytes:
    """An enclosed expression's values in an attribute: joined by single spaces, escaped."""
    return serialized_attribute(" ".join(values)).encode()


def namespace_declaration(prefix: str, uri: str) -> bytes:
    """``xmlns:prefix="uri"`` (with its leading space) for a start tag."""
    return f' xmlns:{prefix}="{_escape_attribute(uri)}"'.encode()


def attribute_node(name: str, value: str) -> bytes:
    """An attribute copied onto a constructed element (``{ $v/@id }``)."""
    return f' {name}="{serialized_attribute(value)}"'.encode()


def compile_items(items: ast.Items, slots: list[ast.RelPath]) -> ElementTemplate:
    """A returned sequence: its items' templates and slots, concatenated, with no element around."""
    content: list[ElementTemplate | Slot | bytes] = []
    for item in items.items:
        if isinstance(item, ast.Constructor):
            content.append(compile_constructor(item, slots))
        else:
            slots.append(item)
            content.append(Slot(len(slots) - 1))
    return ElementTemplate(start=b"", end=b"", empty=b"", content=tuple(content))


def wrapper_template(wrapper: ast.Constructor) -> ElementTemplate:
    """The constant element around a whole FLWR result; its content is the concatenated groups."""
    declarations, inner = _Scope().start(wrapper)
    qname = str(wrapper.name)
    attributes = "".join(f' {a.name}="{serialized_attribute(a.constant or "")}"' for a in wrapper.attributes)
    return ElementTemplate(
        start=f"<{qname}{declarations}{attributes}>".encode(),
        end=f"</{qname}>".encode(),
        empty=f"<{qname}{declarations}{attributes}/>".encode(),
        content=(Slot(0, inner.bindings.get("", "")),),
    )


S = TypeVar("S")


@dataclass(frozen=True)
class SlotElement(Generic[S]):
    """A constructed element whose content is slots only: ``empty`` when they all come out empty.

    ``S`` is what a slot is: a :class:`Slot` here; the planner swaps in what it resolved each to.
    """

    start: bytes
    end: bytes
    empty: bytes
    slots: tuple[S, ...]


Op = bytes | Slot | SlotElement[Slot]


def flatten(template: Template) -> tuple[Op, ...]:
    """Compile a template into a flat sequence, rendered per binding by one loop without recursion.

    An element with literal text or a constructed child is never empty, so its tags become plain
    bytes around its flattened content; only an element holding nothing but slots needs the check
    for ``<e/>``. Adjacent bytes are merged.
    """
    ops: list[Op] = []
    _flatten_into(template, ops)
    merged: list[Op] = []
    for op in ops:
        if isinstance(op, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += op
        else:
            merged.append(op)
    return tuple(merged)


def _flatten_into(template: Template, ops: list[Op]) -> None:
    if isinstance(template, Slot):
        ops.append(template)
        return
    content = [part for part in template.content if part != b""]  # empty text adds no content
    if template.head:  # a start tag built per binding: never the <e/> form
        ops.extend(template.head)
    elif not content:
        ops.append(template.empty)
        return
    elif all(isinstance(part, Slot) for part in content):
        slots = tuple(part for part in content if isinstance(part, Slot))
        ops.append(SlotElement(template.start, template.end, template.empty, slots))
        return
    else:
        ops.append(template.start)
    for part in content:
        if isinstance(part, bytes):
            ops.append(part)
        else:
            _flatten_into(part, ops)
    ops.append(template.end)


def render_items(items: Sequence[Item], ctx: DocumentView, default_ns: str = "") -> bytes:
    """Copies of the selected nodes, concatenated (adjacent text nodes merge, as XQuery's do)."""
    return render_items_within(items, ctx, sys.maxsize, default_ns) or b""  # never None: no limit


def render_items_within(
    items: Sequence[Item], ctx: DocumentView, limit: int, default_ns: str = ""
) -> bytes | None:
    """:func:`render_items`, or None as soon as the copies pass ``limit`` bytes."""
    # Kept tight: it runs for every distinct slot of a document and binding.
    out = []
    size = 0
    serialized = ctx.serialized
    tails: _Tails | None = None  # made at the first text node after a child only: most slots hold none
    for item in items:
        if isinstance(item, bytes):
            data = item
        elif isinstance(item, tuple):
            if item[1] == 0:  # the element's own text: no child to reach
                data = escape_text(ctx.nodes[item[0]].text or "")
            else:
                if tails is None:
                    tails = _Tails(ctx)
                data = escape_text(tails.after(item[0], item[1] - 1) or "")
        elif default_ns:
            data = _copied_element(ctx, item, default_ns)
        else:
            data = serialized(item)
        size += len(data)
        if size > limit:
            return None
        out.append(data)
    return b"".join(out)


def assemble_within(
    code: Sequence[Any], wrapper: ElementTemplate | None, ctx: DocumentView, bound: list[int], limit: int
) -> bytes | None:
    """A FLWR result (each binding through the flattened template, in the wrapper), or None as soon
    as it passes ``limit`` bytes.

    ``code`` is a plan's flattened template with its slots resolved: bytes, slot elements and slot
    refs (:class:`~feedrouter.output.view.SlotRef`, whose bytes per binding the document's
    :attr:`~feedrouter.output.view.DocumentView.slot_bytes` keeps under ``(ref, binding)``: built
    here when missing, within what is left of the limit, and filed so that every plan returning the
    same slot reuses them).
    """
    get = ctx.slot_bytes.get
    parts: list[bytes] = []
    append = parts.append
    size = 0
    for b in bound:
        for op in code:
            kind = op.__class__
            if kind is bytes:
                data = op
            elif kind is SlotElement:  # an element holding only slots: <e/> when they are all empty
                pieces = []
                used = len(op.start) + len(op.end)
                for ref in op.slots:
                    piece = get((ref, b))
                    if piece is None:
                        piece = _build_slot(ref, ctx, b, limit - size - used)
                        if piece is None:
                            return None
                    used += len(piece)
                    if size + used > limit:
                        return None
                    pieces.append(piece)
                body = b"".join(pieces)
                data = op.start + body + op.end if body else op.empty
            else:
                data = get((op, b))
                if data is None:
                    data = _build_slot(op, ctx, b, limit - size)
                    if data is None:
                        return None
            size += len(data)
            if size > limit:
                return None
            append(data)
    result = render_wrapped(wrapper, b"".join(parts))
    return result if len(result) <= limit else None


def _build_slot(ref: SlotRef, ctx: DocumentView, bound: int, limit: int) -> bytes | None:
    """A slot's bytes for one binding, filed in the slot bytes; None (nothing filed) past ``limit``."""
    profiler = ctx.profiler
    if profiler is None:
        data = render_items_within(ref.item.select(ctx, bound), ctx, limit, ref.default_ns)
    else:
        items = ref.item.items(ctx, bound)
        with profiler.measure("message factory"):
            data = render_items_within(items, ctx, limit, ref.default_ns)
    if data is not None:
        ctx.slot_bytes[ref, bound] = data
    return data


class _Tails:
    """The text nodes of elements after their first, read for one rendering.

    Such a text node is the tail of the element's child before it, and lxml finds the child at an
    index by walking the children from the first: reading ``element[i]`` for each text node of an
    element with many children (``<p>t<b/>t<b/>...</p>``) would be quadratic. So the child last
    reached is kept, and a later text node of the same element is reached from it: an element's
    text nodes in document order cost one walk over its children.
    """

    __slots__ = ("_child", "_ctx", "_nid", "_position")

    def __init__(self, ctx: DocumentView) -> None:
        self._ctx = ctx
        self._nid = -1
        self._position = 0
        self._child: etree._Element | None = None

    def after(self, nid: int, position: int) -> str | None:
        """The text after child ``position`` of element ``nid`` (its tail)."""
        child = self._child
        if child is not None and nid == self._nid and position >= self._position:
            child = _following(child, position - self._position)
        else:  # another element, or back in this one (never in document order): from its first child
            child = self._ctx.nodes[nid][position]
        self._child, self._nid, self._position = child, nid, position
        return child.tail


def _following(child: etree._Element, steps: int) -> etree._Element:
    """The sibling ``steps`` after ``child``, counted as ``element[i]`` counts children."""
    for _ in range(steps):
        sibling = child.getnext()
        if sibling is None:
            raise IndexError("a text node reference past the last child of its element")
        child = sibling
    return child


def _copied_element(ctx: DocumentView, nid: int, default_ns: str) -> bytes:
    data = ctx.serialized(nid)
    if default_ns and ctx.nodes[nid].nsmap.get(None) is None:
        # The copy has no default namespace, but the constructed parent declares one: undeclare it,
        # or a no-namespace element would be read back in the parent's namespace.
        end = _name_end(data)
        data = data[:end] + b' xmlns=""' + data[end:]
    return data


def _name_end(data: bytes) -> int:
    for i in range(1, len(data)):
        if data[i : i + 1] in b" />\t\r\n":
            return i
    return len(data)


def render_wrapped(wrapper: ElementTemplate | None, body: bytes) -> bytes:
    if wrapper is None:
        return body
    return wrapper.start + body + wrapper.end if body else wrapper.empty
