"""The message factory: constructor templates, namespace declarations, escaping, empty elements."""

from __future__ import annotations

from feedrouter.lang import ast
from feedrouter.output.factory import (
    Slot,
    SlotElement,
    compile_constructor,
    escape_text,
    flatten,
    wrapper_template,
)


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
    wrapper = wrapper_template(q("all", "urn:d"))
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
