"""The message factory: constructor templates, namespace declarations, escaping, empty elements."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from feedrouter.lang import ast
from feedrouter.output.factory import (
    Slot,
    SlotElement,
    assemble_within,
    compile_constructor,
    escape_text,
    flatten,
    render_items,
    render_items_within,
    wrapper_template,
)
from feedrouter.output.view import DocumentView, Item, SlotBytes


def q(local: str, uri: str = "", prefix: str = "") -> ast.QName:
    return ast.QName(uri, local, prefix)


def test_text_is_escaped_as_xml_serialization_does() -> None:
    assert escape_text("a<b>&c\r") == b"a&lt;b&gt;&amp;c&#13;"


def test_constructor_compiles_to_tags_and_slots_in_order() -> None:
    slots: list[ast.RelPath] = []
    ctor = ast.Constructor(
        q("section"),
        (
            ast.TextContent("S: "),
            ast.Enclosed((ast.RelPath(), ast.RelPath((ast.Step(ast.Axis.CHILD, q("t")),)))),
            ast.Constructor(q("inner")),
        ),
    )
    template = compile_constructor(ctor, slots)
    assert len(slots) == 2
    assert (
        template.start == b"<section>" and template.end == b"</section>" and template.empty == b"<section/>"
    )
    assert template.content[0] == b"S: "
    assert [getattr(c, "index", None) for c in template.content[1:3]] == [0, 1]


def test_namespaces_are_declared_where_first_needed_only() -> None:
    slots: list[ast.RelPath] = []
    inner = ast.Constructor(q("b", "urn:d"))
    outer = ast.Constructor(q("a", "urn:d"), (inner, ast.Constructor(q("c", "urn:p", "p"))))
    template = compile_constructor(outer, slots)
    assert template.start == b'<a xmlns="urn:d">'
    assert template.content[0].start == b"<b>"
    assert template.content[1].start == b'<p:c xmlns:p="urn:p">'


def test_no_namespace_constructor_inside_a_default_namespace_undeclares_it() -> None:
    outer = ast.Constructor(q("a", "urn:d"), (ast.Constructor(q("b")),))
    template = compile_constructor(outer, [])
    assert template.content[0].start == b'<b xmlns="">'


def test_wrapper_slot_knows_the_default_namespace_in_scope() -> None:
    wrapper = wrapper_template(ast.Constructor(q("all", "urn:d")))
    assert wrapper.start == b'<all xmlns="urn:d">'
    assert wrapper.content[0].default_ns == "urn:d"


def test_flattened_templates_merge_literals_and_keep_the_empty_element_check() -> None:
    slots: list[ast.RelPath] = []
    step = ast.RelPath((ast.Step(ast.Axis.CHILD, q("t")),))
    ctor = ast.Constructor(
        q("r"),
        (
            ast.Constructor(q("part"), (ast.Enclosed((step,)),)),  # slots only: may be <part/>
            ast.Enclosed((step,)),
            ast.Constructor(q("empty")),
            ast.TextContent("x"),
        ),
    )
    ops = flatten(compile_constructor(ctor, slots))
    assert ops == (
        b"<r>",
        SlotElement(b"<part>", b"</part>", b"<part/>", (Slot(0),)),
        Slot(1),
        b"<empty/>x</r>",  # adjacent literals merged
    )
    assert flatten(Slot(0)) == (Slot(0),)
    # an element whose only content is empty text is the empty element
    assert flatten(compile_constructor(ast.Constructor(q("e"), (ast.TextContent(""),)), [])) == (b"<e/>",)


# -- the factory reads a document through DocumentView alone ---------------------------------------


class _View:
    """A DocumentView without any plan: what the factory may rely on and nothing more."""

    def __init__(self, document: bytes) -> None:
        self.nodes = list(etree.fromstring(document).iter(etree.Element))
        self.profiler = None
        self.slot_bytes: SlotBytes = {}

    def serialized(self, nid: int) -> bytes:
        return etree.tostring(self.nodes[nid], encoding="utf-8", with_tail=False)


@dataclass(frozen=True)
class _Children:
    """A slot's items: the element children of the bound node."""

    def select(self, ctx: DocumentView, bound: int) -> list[Item]:
        return [ctx.nodes.index(child) for child in ctx.nodes[bound]]

    items = select


@dataclass(frozen=True)
class _Ref:
    item: _Children
    default_ns: str = ""


def test_a_result_is_assembled_from_a_document_view_and_its_slot_bytes_are_filed() -> None:
    view = _View(b"<r><a><b>1</b><c/></a><a/></r>")
    ref = _Ref(_Children())
    code = flatten(compile_constructor(ast.Constructor(q("x"), (ast.Enclosed((ast.RelPath(),)),)), []))
    code = tuple(
        SlotElement(op.start, op.end, op.empty, (ref,)) if isinstance(op, SlotElement) else op for op in code
    )
    wrapper = wrapper_template(ast.Constructor(q("all")))
    result = assemble_within(code, wrapper, view, [1, 4], limit=1000)
    assert result == b"<all><x><b>1</b><c/></x><x/></all>"
    assert view.slot_bytes == {(ref, 1): b"<b>1</b><c/>", (ref, 4): b""}


def test_items_are_rendered_within_a_limit_from_a_document_view() -> None:
    view = _View(b"<r><a>x &amp; y</a><b/></r>")
    assert render_items_within([1, (1, 0), 2], view, limit=100) == b"<a>x &amp; y</a>x &amp; y<b/>"
    assert render_items_within([1, 2], view, limit=10) is None


# -- text nodes: each reached from the one before, not by indexing the children from the first -------


def _inline(count: int) -> bytes:
    """``<r><p>t<b>x</b>0<b>x</b>1...</p></r>``: one element with ``count`` element children."""
    return b"<r><p>t" + b"".join(b"<b>x</b>%d" % i for i in range(count)) + b"</p></r>"


def test_the_text_nodes_of_an_element_with_many_children_render_in_document_order() -> None:
    count = 30_000  # quadratic reading took seconds here; linear takes milliseconds
    view = _View(_inline(count))
    items: list[Item] = [(1, index) for index in range(count + 1)]
    expected = b"t" + b"".join(b"%d" % i for i in range(count))
    assert render_items_within(items, view, limit=1 << 30) == expected
    assert render_items(items, view) == expected
    assert render_items(items, view, default_ns="urn:d") == expected


def test_text_nodes_in_any_order_of_several_elements_render_as_asked() -> None:
    view = _View(b"<r><p>a<b/>b<!--c-->c<?pi?>d<b/></p><q>e<b/>f</q></r>")
    items: list[Item] = [(1, 3), (1, 1), (4, 1), (1, 2), (4, 0), (1, 0), (1, 3), (1, 3)]
    assert render_items_within(items, view, limit=100) == b"dbfceadd"
    assert render_items(items, view) == b"dbfceadd"
