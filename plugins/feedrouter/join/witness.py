"""Witnesses: what stage 1 delivers of one document for one block (paper 001's R_bin / R_doc rows).

For every node the block's plan binds (its element id: document order), the string values of the
block's leaf paths and the bytes of its return fragments, read from the same run over the document
that serves every other subscription (no second pass). The router files them in
:attr:`~feedrouter.router.RouteOutcome.witnesses` under the witness plan's id: a block's, or a base
that serves many blocks (:mod:`feedrouter.join.selections` says which blocks its rows bind).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

from lxml import etree

from feedrouter import kernel
from feedrouter.output.factory import attribute_value, render_items_within
from feedrouter.plan.context import DocumentContext, element_string
from feedrouter.plan.results import ReturnItem, TreeReader, element_copies


class RowSink(Protocol):
    """Where a routing task packs its batch's rows (:class:`feedrouter.join.batches.RowSink`)."""

    message: int
    arrays: tuple[Any, ...]

    def code(self, plan: str) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None: ...

    def truncate(self, mark: Sequence[int]) -> None: ...

    def drop_message(self) -> None: ...


class WitnessRow(NamedTuple):
    """One bound node of a block in one document (a named tuple: one is made for every node a
    witness plan binds, and a tuple is made in a fraction of a frozen dataclass's time).

    Attributes:
        node: the element's id in the document (preorder: document order).
        values: per leaf path of the block (its spec's order), the string values it selects.
        fragments: per fragment of the block (its spec's order), the rendered bytes.
    """

    node: int
    values: tuple[tuple[str, ...], ...]
    fragments: tuple[bytes, ...]


#: makes a :class:`WitnessRow` from a tuple of its fields in C (the named tuple's own ``__new__``
#: is a Python function: a frame per row)
_witness_row = tuple.__new__


def witness_rows(
    returns: Sequence[ReturnItem],
    leaves: int,
    default_ns: Sequence[str],
    ctx: DocumentContext,
    bound: Sequence[int],
    limit: int,
) -> tuple[list[WitnessRow], int] | None:
    """The rows of one block in one document and their size in bytes: ``returns`` are its plan's
    return items, the first ``leaves`` of them leaf paths, the others fragments rendered in
    constructors with the default namespaces ``default_ns``. None as soon as the rows pass ``limit``
    bytes (the caller refuses the block's witnesses for this document, as a subscription's result
    past its limit)."""
    return row_reader(returns, leaves, default_ns).rows(ctx, bound, limit)


def first_named_row(root: etree._Element, name: str, limit: int) -> tuple[list[WitnessRow], int] | None:
    """The row of a block that reads the string value of the first element named ``name`` (no
    namespace) in document order (a feed's event time, ``//pubDate``:
    :meth:`~feedrouter.join.plan.BlockSpec.first_element`), and its size in bytes: no rows when the
    document has no such element, None past ``limit`` bytes. The row the block's witness plan would
    read (the tests compare the two), found in one walk of the parsed tree instead of a path in the
    shared NFA, a plan and its bindings: the clock is read from every message of a feed with joins,
    and that machinery cost as much as every subscription's blocks together read once."""
    find = kernel.first_named_text
    found = find(root, name.encode()) if find is not None else _first_named(root, name)
    if found is None:
        return [], 0
    node, element, value = found
    if value is None:  # not text alone inside (or no kernel): its string value the general way
        value = element_string(element)
    size = 16 + len(value)  # as RowReader.rows counts a row
    if size > limit:
        return None
    return [_witness_row(WitnessRow, (node, ((value,),), ()))], size


def _first_named(root: etree._Element, name: str) -> tuple[int, etree._Element, None] | None:
    """:func:`first_named_row`'s search without the compiled kernel (its reference): the element
    and its id, its text left to the caller."""
    found = _named_elements(root, name, first=True)
    return (*found[0], None) if found else None


def _named_elements(root: etree._Element, name: str, first: bool) -> list[tuple[int, etree._Element]]:
    """Every element named ``name`` (no namespace) in document order with its pre-order id, or
    only the first: what the compiled kernel's :func:`~feedrouter.kernel.all_named` and
    :func:`~feedrouter.kernel.first_named` find, without it (their reference)."""
    found = []
    for node, element in enumerate(root.iter(etree.Element)):
        if element.tag == name:
            found.append((node, element))
            if first:
                break
    return found


class Walked:
    """A join block whose nodes are every element of one name, ``//item`` (or the first one), read
    off the parsed tree (:meth:`~feedrouter.router.Router.add_witness`): its nodes are found in one
    compiled walk (:func:`~feedrouter.kernel.all_named`) and their rows read as its witness plan
    reads them (:class:`RowReader`), instead of a path in the shared NFA, an entry in the
    selection index and a plan's bindings. A feed's blocks are mostly factored into one such
    base (:mod:`feedrouter.join.selections`), bound on every message: the machinery cost about as
    much as the row itself.

    Only blocks whose every leaf and fragment the kernel reads off a node's children qualify
    (:meth:`of`): the general path of a row reads paths' streams of the shared NFA, which such a
    block has none of.

    Attributes:
        name: the elements' local name (no namespace).
        first: whether only the first element's row is read.
        returns, leaves, namespaces: the block's return items (of a plan compiled apart, without
            the DTD), how many are leaves, and each fragment's default namespace.
    """

    __slots__ = ("_encoded", "_reader", "first", "leaves", "name", "namespaces", "returns")

    def __init__(
        self,
        name: str,
        first: bool,
        returns: tuple[ReturnItem, ...],
        leaves: int,
        namespaces: tuple[str, ...],
    ) -> None:
        self.name, self.first = name, first
        self.returns, self.leaves, self.namespaces = returns, leaves, namespaces
        self._reader: RowReader | None = None
        self._encoded = name.encode()

    @classmethod
    def of(
        cls, name: str, first: bool, returns: Sequence[ReturnItem], leaves: int, namespaces: Sequence[str]
    ) -> Walked | None:
        """The block read off the tree, or None where a row would need the general path."""
        walked = cls(name, first, tuple(returns), leaves, tuple(namespaces))
        return walked if walked.reader().plain is not None else None

    def reader(self) -> RowReader:
        """How its rows are read, worked out once per process."""
        found = self._reader
        if found is None:
            found = self._reader = RowReader(self.returns, self.leaves, self.namespaces)
        return found

    def rows(
        self, ctx: DocumentContext, root: etree._Element, limit: int
    ) -> tuple[list[WitnessRow], int] | None:
        """The rows of the block in the document whose element is ``root`` and their size in
        bytes (no rows when it has no such element), None past ``limit`` bytes: what its witness
        plan reads (the tests compare the two)."""
        reader = self.reader()
        walk = kernel.walked_rows
        if walk is not None and reader.plain is not None:  # one build with plain_row
            return self._walked_rows(walk, reader, ctx, root, limit)
        found: list[tuple[int, etree._Element]]
        if self.first:
            one = kernel.first_named
            if one is None:
                found = _named_elements(root, self.name, True)
            else:
                hit = one(root, self._encoded)
                found = [hit] if hit is not None else []
        else:
            every = kernel.all_named
            found = _named_elements(root, self.name, False) if every is None else every(root, self._encoded)
        if not found:
            return [], 0
        return reader.rows_of(ctx, found, limit)

    def _walked_rows(
        self,
        walk: kernel.WalkedRows,
        reader: RowReader,
        ctx: DocumentContext,
        root: etree._Element,
        limit: int,
    ) -> tuple[list[WitnessRow], int] | None:
        """:meth:`rows` in one compiled walk (:func:`~feedrouter.kernel.walked_rows`): the nodes
        found and their rows read as :meth:`RowReader.rows_of` reads them, its children's walks
        charged to the document's budget as it charges them; the nodes from one the kernel declines
        on are read by :meth:`RowReader.rows_of` from there."""
        rows, size, units, rest = walk(*self._walk_arguments(reader, ctx, root, limit), WitnessRow)
        if units:
            ctx.charge(units)
        if rows is None:
            return None
        if rest:
            more = reader.rows_of(ctx, rest, limit - size)
            if more is None:
                return None
            rows += more[0]
            size += more[1]
        return rows, size

    def _walk_arguments(
        self, reader: RowReader, ctx: DocumentContext, root: etree._Element, limit: int
    ) -> tuple[Any, ...]:
        """What both compiled walks are given first: the element, the name, how the rows are read,
        the limit, and the document's charged elements and work left."""
        assert reader.plain is not None
        return (
            root,
            self._encoded,
            self.first,
            reader.names,
            *reader.plain,
            limit,
            ctx.caches.children_charged,
            ctx.max_work - ctx.work,
            reader.walks,
        )

    def rows_into(
        self, ctx: DocumentContext, root: etree._Element, limit: int, sink: RowSink, code: tuple[Any, ...]
    ) -> tuple[list[WitnessRow], int] | None:
        """:meth:`rows`, the rows the compiled walk reads packed straight into a routing task's batch
        (``sink``, the plan numbered ``code`` there: :func:`~feedrouter.kernel.walked_into`): the
        rows left to give are those of the nodes it declines on, read by :meth:`RowReader.rows_of`
        (the batch packs them later), and the size counts them all. Without the kernel, every row
        is given. None past ``limit``, with nothing left packed."""
        reader = self.reader()
        into = kernel.walked_into
        if into is None or reader.plain is None:
            return self.rows(ctx, root, limit)
        walked = self._walk_arguments(reader, ctx, root, limit)
        count, size, units, rest, mark = into(walked, sink.message, code, sink.arrays)
        if units:
            ctx.charge(units)  # past the document's budget: the router takes the message's rows back
        if count is None:
            return None
        if not rest:
            return [], size
        assert mark is not None
        try:
            more = reader.rows_of(ctx, rest, limit - size)
        except BaseException:  # the block fails alone (or the document): none of its rows stay
            sink.truncate(mark)
            raise
        if more is None:
            sink.truncate(mark)
            return None
        return more[0], size + more[1]

    def __getstate__(self) -> tuple[str, bool, tuple[ReturnItem, ...], int, tuple[str, ...]]:
        return self.name, self.first, self.returns, self.leaves, self.namespaces

    def __setstate__(self, state: tuple[str, bool, tuple[ReturnItem, ...], int, tuple[str, ...]]) -> None:
        self.__init__(*state)  # type: ignore[misc]


def row_reader(returns: Sequence[ReturnItem], leaves: int, default_ns: Sequence[str]) -> RowReader:
    """How the rows of a block whose plan returns ``returns`` are read (:func:`witness_rows`)."""
    return _row_reader(tuple(returns), leaves, tuple(default_ns))


@lru_cache(maxsize=4096)  # a feed's witness plans and the clock: far fewer (bounded: plans change hourly)
def _row_reader(returns: tuple[ReturnItem, ...], leaves: int, default_ns: tuple[str, ...]) -> RowReader:
    return RowReader(returns, leaves, default_ns)


class RowReader:
    """How one witness plan's rows are read, worked out once per plan and way of splitting its
    return items (a row is built for every node a message binds: the loop stays tight).

    Items whose paths allow it are read off the node's children (:class:`~feedrouter.plan.results.
    TreeReader`): a message binds a block's path once or twice, too few for the GroupBy of each
    path's stream to pay. A plain child element (``author``) is the common case, for leaves and
    fragments alike: its values, its copies and its values in an attribute come straight from the
    node's children by name, one look-up each. Others take the general path, their values and
    fragments cached per node and item: every block binding the node shares them.

    Where :mod:`feedrouter.kernel` is built, the plain children, own attributes and own text a row reads
    (:attr:`names`) are read in one compiled walk over the node's children: when they are every
    item the row reads (:attr:`plain`), the kernel makes the whole row in that call
    (:func:`~feedrouter.kernel.plain_row`); otherwise it reads those columns
    (:func:`~feedrouter.kernel.plain_children`) and :meth:`_general_row` the rest. Where it
    declines, :meth:`_general_row` reads the row as without it, with the same bytes, the same
    refusals past a limit and the same work charged.
    """

    __slots__ = ("fragments", "leaves", "names", "plain", "walks")

    def __init__(self, returns: tuple[ReturnItem, ...], leaves: int, default_ns: tuple[str, ...]) -> None:
        columns: dict[str, int] = {}

        def column(tag: str | None) -> int:
            """The plain child name's place in what the compiled kernel reads (-1: not read there)."""
            if tag is None or tag.startswith("{"):
                return -1
            return columns.setdefault(tag, len(columns))

        self.leaves = [
            (item, reader, tag, column(tag or _own_attribute(reader) or _own_text(reader)))
            for item in returns[:leaves]
            for reader, tag in [(item.tree_reader, _child_tag(item.tree_reader))]
        ]
        self.fragments = [
            (item, ns, reading[0], reading[1], reading[2], column(reading[1]))
            for item, ns in zip(returns[leaves:], default_ns, strict=True)
            for reading in [_fragment_reading(item, ns)]
        ]
        #: the child names the kernel reads in one walk over a node's children (UTF-8)
        self.names = tuple(name.encode() for name in columns)
        #: whether the kernel walks the node's children (a child name, not only own attributes):
        #: the walk is charged to the document's work budget as the Python path's is
        self.walks = any(not name.startswith(("@", ".")) for name in columns)
        #: when the kernel reads every item (the common case): each leaf's column, each fragment's
        #: column and how it is written (:func:`feedrouter.kernel.plain_row`'s arguments)
        self.plain = (
            (
                tuple(leaf[3] for leaf in self.leaves),
                tuple(f[5] for f in self.fragments),
                tuple(f[4] for f in self.fragments),
            )
            if all(leaf[3] >= 0 for leaf in self.leaves) and all(f[5] >= 0 for f in self.fragments)
            else None
        )

    def rows(
        self, ctx: DocumentContext, bound: Sequence[int], limit: int
    ) -> tuple[list[WitnessRow], int] | None:
        """The rows of the nodes ``bound`` and their size in bytes (with 16 per row for its
        bookkeeping); None as soon as they pass ``limit`` (:func:`witness_rows`)."""
        nodes = ctx.nodes
        # -1: the document node (general path)
        return self.rows_of(ctx, [(node, nodes[node] if node >= 0 else None) for node in bound], limit)

    def rows_of(
        self, ctx: DocumentContext, bound: Sequence[tuple[int, etree._Element | None]], limit: int
    ) -> tuple[list[WitnessRow], int] | None:
        """:meth:`rows` of nodes given with their elements (None: the document node). One loop for
        every row of a message (a plain row is a kernel call and a tuple: no frame of its own)."""
        rows: list[WitnessRow] = []
        size = 0
        plain = self.plain
        read_row = kernel.plain_row if plain is not None else None  # per call: benchmarks turn it off
        for node, element in bound:
            left = limit - size
            if element is None:
                built = self._general_row(ctx, None, node, None, left)
            elif read_row is not None and plain is not None:
                if self.walks:
                    ctx.charge_children(element)
                found = read_row(element, self.names, *plain, left)
                if found:
                    rows.append(_witness_row(WitnessRow, (node, found[0], found[1])))
                    size += found[2]
                    continue
                if found is False:  # past the limit: the Python path refuses it too, at no cost
                    return None
                # declined for what every column would decline for
                built = self._general_row(ctx, element, node, None, left)
            else:
                built = self._general_row(ctx, element, node, self._plain_columns(ctx, element, left), left)
            if built is None:
                return None
            rows.append(built[0])
            size += built[1]
        return rows, size

    def row(self, ctx: DocumentContext, node: int, limit: int) -> tuple[WitnessRow, int] | None:
        """One node's row and its size in bytes; None past ``limit``."""
        found = self.rows(ctx, (node,), limit)
        return None if found is None else (found[0][0], found[1])

    def _general_row(
        self,
        ctx: DocumentContext,
        element: etree._Element | None,
        node: int,
        plain: tuple[tuple[tuple[str, ...], bytes], ...] | None,
        limit: int,
    ) -> tuple[WitnessRow, int] | None:
        """:meth:`row` where the kernel did not read every item (``plain``: what it read, if any)."""
        children = None
        size = 16
        values = []
        for item, reader, tag, column in self.leaves:
            if plain is not None and column >= 0:
                strings = plain[column][0]
            elif element is None or reader is None:
                strings, length = _general_values(ctx, item, node)
                values.append(strings)
                size += length
                continue
            elif tag is None:
                strings = tuple(reader.values(ctx, element))
            else:
                if children is None:
                    children = ctx.children_named(element)
                found = children.get(tag)
                strings = tuple(map(element_string, found)) if found else ()
            values.append(strings)
            size += sum(map(len, strings))
        fragments = []
        data: bytes | None
        for item, ns, reader, tag, kind, column in self.fragments:
            if plain is not None and column >= 0:
                strings, copies = plain[column]
                data = copies if kind == _COPIES else attribute_value(strings)
                if len(data) > limit - size:
                    return None
            elif tag is not None and element is not None:
                if children is None:
                    children = ctx.children_named(element)
                found = children.get(tag)
                data = _child_fragment(found, kind, limit - size) if found else _EMPTY[kind]
            else:
                data = _cached_fragment(ctx, item, ns, reader, element, node, limit - size)
            if data is None:
                return None
            fragments.append(data)
            size += len(data)
        if size > limit:
            return None
        return WitnessRow(node, tuple(values), tuple(fragments)), size

    def _plain_columns(
        self, ctx: DocumentContext, element: etree._Element, limit: int
    ) -> tuple[tuple[tuple[str, ...], bytes], ...] | None:
        """Per name in :attr:`names`, the element's children of that name (values, copies) read by
        the compiled kernel in one walk, or None: no kernel, no such name, or the kernel declined
        (a child that is not plain, a namespace in scope, copies past ``limit``: the Python path
        reads the row then, and stops where its limit falls). The walk is charged to the
        document's work budget as the Python path's is, once per element."""
        read_plain = kernel.plain_children  # looked up per row: the benchmarks turn it off and on
        if not self.names or read_plain is None:
            return None
        if self.walks:
            ctx.charge_children(element)
        return read_plain(element, self.names, limit)


#: how a fragment of plain child elements is rendered: their copies, or their values in an attribute
_COPIES, _VALUE = 0, 1
#: what such a fragment is when the node has no child of that name
_EMPTY = {_COPIES: b"", _VALUE: attribute_value(())}


def _fragment_reading(item: ReturnItem, ns: str) -> tuple[TreeReader | None, str | None, int]:
    """How a fragment is read: the tree reader for a node's copies outside a default namespace
    (None: the general path), the child name when it renders plain child elements (by
    :func:`_child_fragment`), and how."""
    reader = None if ns else item.tree_reader
    if reader is None:
        return None, None, _COPIES
    tag = _child_tag(TreeReader(reader.tags)) if not (reader.text or reader.attribute) else None
    return reader, tag, _VALUE if reader.value else _COPIES


def _child_fragment(found: list[etree._Element], kind: int, limit: int) -> bytes | None:
    """Child elements' copies (what :meth:`TreeReader.copies` gives) or their string values in an
    attribute, or None past ``limit`` bytes."""
    if kind == _COPIES:
        return element_copies(found, limit)
    data = attribute_value([element_string(el) for el in found])
    return data if len(data) <= limit else None


def _cached_fragment(
    ctx: DocumentContext,
    item: ReturnItem,
    ns: str,
    reader: TreeReader | None,
    element: etree._Element | None,
    node: int,
    limit: int,
) -> bytes | None:
    """A fragment by its tree reader or the message factory, once per document, item and node."""
    known = ctx.caches.witness_fragments
    data = known.get((item, ns, node))
    if data is None:
        if reader is not None and element is not None:
            data = reader.copies(ctx, element, limit)
        else:
            data = render_items_within(item.select(ctx, node), ctx, limit, ns)
        if data is None:
            return None
        known[(item, ns, node)] = data
    return data


def _child_tag(reader: TreeReader | None) -> str | None:
    """The name of a reader that reads child elements' string values, one step down."""
    if reader is None or len(reader.tags) != 1 or reader.text or reader.attribute or reader.value:
        return None
    return reader.tags[0]


def _own_attribute(reader: TreeReader | None) -> str | None:
    """``@name`` for a reader of the node's own attribute of a plain name (the kernel reads it)."""
    if reader is None or reader.tags or reader.text or reader.value or not reader.attribute:
        return None
    name = reader.attribute
    return None if "{" in name or "*" in name or ":" in name else "@" + name


def _own_text(reader: TreeReader | None) -> str | None:
    """``.`` for a reader of the node's own string value (an event-time path's leaf, ``//pubDate``):
    the kernel reads it when the node has nothing but text inside."""
    if reader is None or reader.tags or reader.text or reader.value or reader.attribute:
        return None
    return "."


def _general_values(ctx: DocumentContext, item: ReturnItem, node: int) -> tuple[tuple[str, ...], int]:
    """A leaf's values for one node by the item's own path (its streams' GroupBy), with their
    length, once per document, item and node."""
    known = ctx.caches.witness_values
    found = known.get((item, node))
    if found is None:
        strings = tuple(item.values(ctx, node))
        found = known[(item, node)] = (strings, sum(map(len, strings)))
    return found
