"""A subscription's result side: return items, their per-document slot bytes, and the plan that turns
the engine's streams into one subscription's result (bindings through the template, in the wrapper).

The planner builds these (:mod:`feedrouter.plan.planner`); routing runs :meth:`SubscriptionPlan.result`
once per matched plan and document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lxml import etree

from feedrouter.engine.document import attribute_items, attribute_values, iter_text_nodes
from feedrouter.errors import CompileWarning
from feedrouter.lang import ast
from feedrouter.lang.ast import XML_NAMESPACE
from feedrouter.output.factory import (
    ElementTemplate,
    Item,
    Op,
    Slot,
    SlotElement,
    Template,
    attribute_node,
    attribute_value,
    escape_text,
    flatten,
    namespace_declaration,
    render_items,
    render_wrapped,
)
from feedrouter.plan.context import DocumentContext, element_string
from feedrouter.plan.evaluate import values
from feedrouter.plan.operators import PatternPlan, UnionPlan
from feedrouter.plan.patterns import PathPattern, format_pattern
from feedrouter.plan.search import search_all
from feedrouter.plan.values import to_double

#: The id that stands for the document node in a filter's selected nodes (``//a/..`` on the root).
DOCUMENT_NODE = -1


class SlotRef:
    """One return item under one default namespace: the key of its slot bytes in a document's memo.

    Each :class:`ReturnItem` hands out one ref per namespace (:meth:`ReturnItem.ref`), and return
    items are interned, so every plan that returns ``$v/title`` into the same scope holds the same
    ref and reuses the bytes built for a binding.
    """

    __slots__ = ("default_ns", "item")

    def __init__(self, item: ReturnItem, default_ns: str) -> None:
        self.item = item
        self.default_ns = default_ns

    def build(self, ctx: DocumentContext, bound: int) -> bytes:
        """Build this slot's bytes for one binding and file them in the memo, so that they are
        built once per document (the result loop looks the memo up first: a call costs more)."""
        profiler = ctx.profiler
        if profiler is None:
            data = render_items(self.item.select(ctx, bound), ctx, self.default_ns)
        else:
            items = self.item.items(ctx, bound)
            with profiler.measure("message factory"):
                data = render_items(items, ctx, self.default_ns)
        ctx.slot_bytes[self, bound] = data
        return data


@dataclass(frozen=True)
class Upward:
    """A return path that starts upward from the bound node (``$s/..``, ``$s/ancestor::story/title``):
    the upper nodes come from the parent ids the run recorded (no walk of the tree), filtered by name
    and by the shared node sets of their predicates; forward steps below them come from the GroupBy
    of ``//Y/f`` on its first field (``below``, planned by the planner), one shared stream."""

    chain: tuple[ast.UpStep, ...]
    below: PathPattern | None = None
    plan: PatternPlan | None = field(default=None, compare=False)

    def nodes(self, ctx: DocumentContext, bound: int) -> list[int]:
        tops = ctx.upward(bound, self.chain)
        if self.plan is None:
            return tops
        below: set[int] = set()
        for top in tops:
            below.update(self.plan.group(ctx, 0, top))
        return sorted(below)


_UNKNOWN = object()


@dataclass(frozen=True)
class TreeReader:
    """A return path read off the tree for one bound node: child steps with plain names from it
    (none: the node itself), then its text nodes or its attributes by a name test.

    What a join's witness row reads of each node its block binds (:mod:`feedrouter.join.witness`):
    a look at the node's children instead of the GroupBy of each path's stream, which pays off for
    a whole document's bindings but not for the one or two items a message has. Exact: child steps
    from one node reach distinct nodes in document order, and values and copies are what
    :meth:`ReturnItem.values` and the message factory give for them.
    """

    tags: tuple[str, ...]
    text: bool = False
    attribute: str = ""
    value: bool = False  # an attribute value template's part: the values joined by spaces

    @classmethod
    def of(cls, item: ReturnItem) -> TreeReader | None:
        if item.upward is not None:
            return None
        pattern = item.pattern
        if pattern is None:
            return cls((), item.text, item.attribute, item.value)
        steps = pattern.nav[pattern.base :]
        if pattern.branches or any(pattern.tests[pattern.base :]):
            return None
        if any(step.axis is not ast.Axis.CHILD or "*" in step.tag for step in steps):
            return None
        return cls(tuple(step.tag for step in steps), item.text, item.attribute, item.value)

    def elements(self, ctx: DocumentContext, element: etree._Element) -> list[etree._Element]:
        """The elements the child steps reach from ``element``, in document order (charged to the
        document's work budget, a unit per child looked at; read only: a document-wide memo)."""
        found = [element]
        for tag in self.tags:
            if len(found) == 1:
                found = ctx.children_named(found[0]).get(tag, [])
            else:
                found = [child for parent in found for child in ctx.children_named(parent).get(tag, ())]
        return found

    def values(self, ctx: DocumentContext, element: etree._Element) -> list[str]:
        """The string values :meth:`ReturnItem.values` gives for the node."""
        found = self.elements(ctx, element)
        if self.attribute:
            return [v for el in found for v in attribute_values(el, self.attribute)]
        if self.text:
            return [text for el in found for _, text in iter_text_nodes(el)]
        return [element_string(el) for el in found]

    def copies(self, ctx: DocumentContext, element: etree._Element, limit: int) -> bytes | None:
        """What the message factory renders for the node's items outside a default namespace
        (:func:`~feedrouter.output.factory.render_items_within`), or None past ``limit`` bytes."""
        if self.value:
            data = attribute_value(self.values(ctx, element))
            return data if len(data) <= limit else None
        found = self.elements(ctx, element)
        if self.attribute:
            parts = [copy for el in found for copy in copied_attributes(el, self.attribute)]
        elif self.text:
            parts = [escape_text(text) for el in found for _, text in iter_text_nodes(el)]
        else:
            return element_copies(found, limit)
        data = b"".join(parts)
        return data if len(data) <= limit else None


def element_copies(elements: Sequence[etree._Element], limit: int) -> bytes | None:
    """The elements serialized one after the other, or None as soon as they pass ``limit`` bytes
    (a node may have thousands of children of one name: copying stops there)."""
    if len(elements) == 1:
        data = etree.tostring(elements[0], encoding="utf-8", with_tail=False)
        return data if len(data) <= limit else None
    parts = []
    size = 0
    for el in elements:
        data = etree.tostring(el, encoding="utf-8", with_tail=False)
        size += len(data)
        if size > limit:
            return None
        parts.append(data)
    return b"".join(parts)


@dataclass(eq=False)
class ReturnItem:
    """One return slot: the bound node itself, or a path from it (through the NFA or a tree search).

    The planner interns return items, so subscriptions returning the same path share one object and
    its per-document memo (keyed by identity).
    """

    pattern: PathPattern | None
    text: bool = False
    plan: PatternPlan | None = None
    dedupe: bool = True  # False where Claim 3 proves the return stream has no duplicates
    refs: dict[str, SlotRef] = field(default_factory=dict, repr=False)
    attribute: str = ""  # the path ends in @attribute (a Clark name): its values, or copies of it
    value: bool = False  # an attribute value template's part: the atomized values joined by spaces
    upward: Upward | None = None  # the path starts with backward steps (class default: older plans)

    @property
    def tree_reader(self) -> TreeReader | None:
        """The item read straight off the tree of one bound node (:class:`TreeReader`), when its
        path allows; worked out once per process (never pickled)."""
        found = self.__dict__.get("_tree_reader", _UNKNOWN)
        if found is _UNKNOWN:
            found = self.__dict__["_tree_reader"] = TreeReader.of(self)
        return found

    def __getstate__(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if key != "_tree_reader"}

    @property
    def key(self) -> tuple:
        """What the items depend on: return items with one key are interned as one."""
        return (
            self.pattern,
            self.text,
            self.dedupe,
            self.plan is not None,
            self.attribute,
            self.value,
            self.upward,
        )

    def ref(self, default_ns: str) -> SlotRef:
        ref = self.refs.get(default_ns)
        if ref is None:
            ref = self.refs[default_ns] = SlotRef(self, default_ns)
        return ref

    def items(self, ctx: DocumentContext, bound: int) -> Sequence[Item]:
        if ctx.profiler is not None:
            category = "OuterJoin-Select" if self.plan is not None else "Return-Select"
            with ctx.profiler.measure(category):
                return self.select(ctx, bound)
        return self.select(ctx, bound)

    def nodes(self, ctx: DocumentContext, bound: int) -> Sequence[int]:
        """The element ids this slot's path selects from one bound node (its attributes and text
        nodes are read from these), in document order."""
        if self.upward is not None:
            return self.upward.nodes(ctx, bound)
        if self.pattern is None:
            return [bound]
        if self.plan is not None:
            return self.plan.group(ctx, self.pattern.base - 1, bound, self.dedupe)
        return search_all(ctx, bound, self.pattern)

    def values(self, ctx: DocumentContext, bound: int) -> list[str]:
        """The string values of the nodes the slot's path selects from one bound node (what a
        general comparison compares: a join's leaf values)."""
        return self._values(ctx, self.nodes(ctx, bound))

    def select(self, ctx: DocumentContext, bound: int) -> Sequence[Item]:
        """The items of this slot for one binding (unprofiled)."""
        nodes = self.nodes(ctx, bound)
        if self.value:
            return [attribute_value(self._values(ctx, nodes))]
        if self.attribute:
            return [copy for nid in nodes for copy in copied_attributes(ctx.nodes[nid], self.attribute)]
        if not self.text:
            return nodes  # shared with the GroupBy's memo: read only
        return [(nid, index) for nid in nodes for index, _ in iter_text_nodes(ctx.nodes[nid])]

    def _values(self, ctx: DocumentContext, nodes: Sequence[int]) -> list[str]:
        """The atomized values of the slot's nodes (attributes, text nodes or elements)."""
        if self.attribute:
            return [v for nid in nodes for v in attribute_values(ctx.nodes[nid], self.attribute)]
        if self.text:
            return [text for nid in nodes for _, text in iter_text_nodes(ctx.nodes[nid])]
        return [ctx.string_value(nid) for nid in nodes]

    def describe(self) -> str:
        if self.upward is not None:
            chain = "".join(
                f"{s.axis.value}{'' if s.axis is ast.Axis.PARENT_NODE else s.name or '*'}"
                for s in self.upward.chain
            )
            below = f" then GroupBy({format_pattern(self.upward.below)})" if self.upward.below else ""
            return f"Return-Upward[recorded parents]($bound{chain}){below}"
        if self.pattern is None:
            return "$bound" + (f"/@{self.attribute}" if self.attribute else "")
        if self.plan is not None:
            how = "OuterJoin-Select over GroupBy" + ("" if self.dedupe else " (no DupElim: Claim 3)")
        else:
            how = "Return-Select[tree]"
        tail = "/text()" if self.text else f"/@{self.attribute}" if self.attribute else ""
        return f"{how}({format_pattern(self.pattern)}{tail})"


Code = bytes | SlotRef | SlotElement[SlotRef]


def _resolve(op: Op, returns: tuple[ReturnItem, ...]) -> Code:
    if isinstance(op, bytes):
        return op
    if isinstance(op, Slot):
        return returns[op.index].ref(op.default_ns)
    refs = tuple(returns[slot.index].ref(slot.default_ns) for slot in op.slots)
    return SlotElement(op.start, op.end, op.empty, refs)


@dataclass
class SubscriptionPlan:
    """Everything needed to turn the engine's streams into one subscription's result.

    Only what routing and :meth:`~feedrouter.router.Router.explain` read is kept: a compiled plan is
    pickled into the plan artifact and unpickled by every executor, and the subscription's text and
    syntax tree (about half of an artifact) are not needed once the plan is built.
    """

    sid: str
    is_flwr: bool
    main: PatternPlan | UnionPlan
    returns: tuple[ReturnItem, ...]
    template: Template
    wrapper: ElementTemplate | None
    held: list[PatternPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # rewrites applied
    warning: CompileWarning | None = None  # FR304: it can never match a document valid under the DTD
    order: tuple[ast.OrderSpec, ...] = ()  # order by: the keys the bindings are sorted by
    # a filter '//a/..': the document node (id -1) is selected too when one of these selects the
    # root element (a class default for plans pickled before)
    document_if: tuple[ast.AbsPath, ...] = ()
    signature: tuple = field(init=False, repr=False)
    code: tuple[Code, ...] = field(init=False, repr=False)  # the template, flattened and resolved

    def __post_init__(self) -> None:
        self.code = tuple(_resolve(op, self.returns) for op in flatten(self.template))
        # What the result depends on, and nothing else: plans with one signature give one result.
        # Patterns stand for their interned plans (the planner interns by pattern).
        returns = tuple(r.key for r in self.returns)
        self.signature = (self.is_flwr, self.main.pattern, returns, self.template, self.wrapper, self.order)
        if self.document_if:  # only then, so that the signatures of plans pickled before stay equal
            self.signature += (self.document_if,)

    def bindings(self, ctx: DocumentContext) -> list[int]:
        """The bound nodes (FLWR) or selected nodes (filter), distinct and in document order, or in
        the order of the ``order by`` keys."""
        bound = ctx.bindings.get(self.main)
        if bound is None:
            bound = ctx.bindings[self.main] = self.main.bound_nodes(ctx)
        if self.order and len(bound) > 1:
            return ordered(ctx, bound, getattr(self, "order", ()))
        if self.document_if and any(ctx.member_set(path) for path in self.document_if):
            return [DOCUMENT_NODE, *bound]  # a new list: the bound nodes are a shared memo
        return bound

    def result(self, ctx: DocumentContext, bound: list[int]) -> bytes:
        """The FLWR result: each binding through the template, concatenated, in the wrapper.

        The hot loop of routing (once per matched plan and binding): the template is pre-flattened,
        its slots resolved to the shared refs whose bytes sit in the per-document memo.
        """
        memo = ctx.slot_bytes
        parts: list[bytes] = []
        append = parts.append
        get = memo.get
        for b in bound:
            for op in self.code:
                # the class is read once per op for speed; mypy does not narrow op through it
                kind = op.__class__
                if kind is bytes:
                    append(op)  # type: ignore[arg-type]
                elif kind is SlotRef:
                    data = get((op, b))
                    append(op.build(ctx, b) if data is None else data)  # type: ignore[union-attr]
                else:  # an element holding only slots: <e/> when they are all empty
                    # the memo first: a call per slot costs more than the look-up
                    body = b"".join(
                        [d if (d := get((r, b))) is not None else r.build(ctx, b) for r in op.slots]  # type: ignore[union-attr]
                    )
                    append(op.start + body + op.end if body else op.empty)  # type: ignore[union-attr]
        return render_wrapped(self.wrapper, b"".join(parts))


def ordered(ctx: DocumentContext, bound: list[int], order: tuple[ast.OrderSpec, ...]) -> list[int]:
    """The bindings sorted by the ``order by`` keys, as XQuery sorts: strings by codepoint, numbers
    as doubles, the empty key (and NaN) least or greatest, equal keys in document order. A key of
    several nodes (XPTY0004 in XQuery) counts as empty (NaN for ``number()``)."""
    result = list(bound)  # the memo is shared with other plans: sort a copy
    for spec in reversed(order):  # stable sorts, last key first: the first key decides most
        keys = {nid: _order_key(ctx, nid, spec) for nid in result}
        result.sort(key=keys.__getitem__, reverse=spec.descending)
    return result


def _order_key(ctx: DocumentContext, nid: int, spec: ast.OrderSpec) -> tuple[int, str | float]:
    """A binding's key as (rank, value). XQuery puts NaN between the empty key and the values, on
    the side ``empty least``/``empty greatest`` puts the empty key; ``number()`` of nothing is NaN."""
    if spec.upward:  # the key's backward steps, over the recorded parents, then the rest from each
        found = [v for top in ctx.upward(nid, spec.upward) for v in values(ctx, ctx.nodes[top], spec.path)]
    else:
        found = values(ctx, ctx.nodes[nid], spec.path)
    low = not spec.empty_greatest
    if spec.numeric:
        number = to_double(found[0]) if len(found) == 1 else None
        if number is None or number != number:
            return (1 if low else 3), 0.0
        return 2, number
    if len(found) != 1:
        return (0 if low else 4), ""
    return 2, found[0]


def _least_prefixes(element: etree._Element) -> dict[str, str]:
    """Per namespace in scope of ``element``, the least of its prefixes (a copy's prefix is one
    the document declares, the same whichever copy asks)."""
    least: dict[str, str] = {}
    for prefix, uri in element.nsmap.items():
        if prefix and (uri not in least or prefix < least[uri]):
            least[uri] = prefix
    return least


def copied_attributes(element: etree._Element, clark: str) -> list[bytes]:
    """``{ $v/@id }``, ``{ $v/@* }``: the attributes as written on the constructed element. One in a
    namespace other than ``xml:`` keeps the document's prefix and brings its declaration (the parser
    keeps such copies off elements whose own names use prefixes)."""
    copies: list[bytes] = []
    declared: set[str] = set()
    prefixes: dict[str, str] | None = None  # uri -> its least prefix in scope, built once
    for key, value in attribute_items(element, clark):
        uri, _, local = key[1:].partition("}") if key.startswith("{") else ("", "", key)
        if not uri:
            copies.append(attribute_node(local, value))
        elif uri == XML_NAMESPACE:
            copies.append(attribute_node("xml:" + local, value))
        else:
            if prefixes is None:  # lxml builds nsmap anew on every read: once, not per attribute
                prefixes = _least_prefixes(element)
            prefix = prefixes[uri]
            declaration = b"" if prefix in declared else namespace_declaration(prefix, uri)
            declared.add(prefix)
            copies.append(declaration + attribute_node(f"{prefix}:{local}", value))
    return copies
