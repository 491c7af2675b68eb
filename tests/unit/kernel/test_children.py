"""The compiled reader of plain children (feedrouter.kernel): where it answers, its values and copies
are exactly lxml's (the XPath string value, ``etree.tostring``, ``element.get``); where a child is
not plain or a namespace is in scope it declines, and the Python path answers."""

from __future__ import annotations

import gc
from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from feedrouter import kernel
from feedrouter.output.factory import attribute_value
from feedrouter.plan.context import element_string

plain_children = kernel.plain_children
#: skips a test only where the kernel is turned off (FEEDROUTER_KERNEL=off); a build that left it out
#: fails test_the_kernel_is_built_here instead
needs_kernel = pytest.mark.skipif(
    plain_children is None, reason="the compiled kernel is turned off or not built"
)


def test_the_kernel_is_built_here() -> None:
    """The project's own files build it (setup.py, scripts/setup): a build that failed quietly (it is
    optional for installs without a compiler) would leave every row on the slow path."""
    if not kernel.requested():
        pytest.skip("turned off here")
    assert plain_children is not None


#: text content libxml2 escapes (``&``, ``<``, ``>``, a carriage return by reference), quotes it
#: does not, characters past ASCII, CDATA (the parser makes it text), an entity of the internal subset
TEXTS = st.sampled_from(
    ["", "x", "a &amp; b", "&lt;c&gt;", "&#13;", "\"q\" 'q'", "é€😀", "<![CDATA[<c>&]]>", " ", "\n\t", "&e;"]
)
#: what makes a child not plain: an element, a comment, a processing instruction, an attribute
# CDATA sections parse into text (an empty one into an empty text node: the element is not empty)
EXTRAS = st.sampled_from([""] * 12 + ["<i>n</i>", "<!--c-->", "<?pi d?>", "<![CDATA[]]>", "<![CDATA[x<&y]]>"])
ATTRIBUTES = st.sampled_from(["", ' id="1"', ' id="a&amp;b"', ' p:id="2"', ' id="&e;"'])
CHILD_ATTRIBUTES = st.sampled_from([""] * 12 + [' id="1"', ' p:id="2"'])
NAMES = ("a", "b", "c")


@st.composite
def items(draw: st.DrawFn) -> str:
    """An ``item`` with attributes and children named a, b, c (some repeated, some not plain)."""
    children = []
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(NAMES))
        body = draw(TEXTS) + draw(EXTRAS) + draw(TEXTS)
        attribute = draw(CHILD_ATTRIBUTES)
        children.append(
            f"<{name}{attribute}>{body}</{name}>" if body or draw(st.booleans()) else f"<{name}/>"
        )
    separator = draw(st.sampled_from(["", "\n  ", "<!--between-->"]))
    return f"<item{draw(ATTRIBUTES)}>{separator.join(children)}</item>"


def parsed(item: str, namespace: bool) -> etree._Element:
    declared = ' xmlns:p="urn:p"' if namespace or "p:" in item else ""
    doctype = '<!DOCTYPE root [<!ENTITY e "E&amp;e">]>' if "&e;" in item else ""
    parser = etree.XMLParser(resolve_entities="internal", no_network=True)  # type: ignore[arg-type]
    return etree.fromstring(f"{doctype}<root{declared}>{item}</root>".encode(), parser)[0]


def python_children(element: etree._Element, names: tuple[str, ...]) -> tuple[object, ...]:
    """What the Python path gives for each name: the children's string values and copies, or the
    element's own attribute's value."""
    found = []
    for name in names:
        if name.startswith("@"):
            value = element.get(name[1:])
            found.append(((() if value is None else (value,)), b""))
            continue
        children = [child for child in element if child.tag == name]
        copies = b"".join(etree.tostring(child, encoding="utf-8", with_tail=False) for child in children)
        found.append((tuple(element_string(child) for child in children), copies))
    return tuple(found)


def is_plain(element: etree._Element, names: tuple[str, ...]) -> bool:
    """Whether the kernel must answer: no namespace in scope, every child it reads plain (text
    only, no attribute), and no DTD where it reads an own attribute (the DTD may default it)."""
    if element.nsmap:
        return False
    if any(name.startswith("@") for name in names) and element.getroottree().docinfo.internalDTD is not None:
        return False
    return all(len(child) == 0 and not child.attrib for child in element if child.tag in names)


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(
    items(),
    st.sampled_from([False] * 4 + [True]),
    st.lists(st.sampled_from(["a", "b", "c", "d", "@id", "@none"]), max_size=5),
)
def test_what_the_kernel_reads_is_lxmls(item: str, namespace: bool, wanted: list[str]) -> None:
    element = parsed(item, namespace)
    names = tuple(dict.fromkeys(wanted))
    read = plain_children(element, tuple(name.encode() for name in names), 10**6)  # type: ignore[misc]
    if read is None:
        assert not is_plain(element, names), item
        return
    assert read == python_children(element, names), item


@needs_kernel
def test_escaping_and_empty_children() -> None:
    element = parsed('<item lang="e&amp;n"><a>1 &lt; 2 &amp;&#13; "3" &gt; é</a><a/><b></b></item>', False)
    read = plain_children(element, (b"a", b"b", b"@lang", b"c"), 10**6)  # type: ignore[misc]
    assert read == (
        (('1 < 2 &\r "3" > é', ""), '<a>1 &lt; 2 &amp;&#13; "3" &gt; é</a><a/>'.encode()),
        (("",), b"<b/>"),
        (("e&n",), b""),
        ((), b""),
    )


@needs_kernel
def test_a_child_holding_an_empty_cdata_section_is_copied_as_lxml_copies_it() -> None:
    """An empty CDATA section leaves an empty text node: lxml writes ``<b></b>``, not ``<b/>``,
    and the copy's length (what limits count) is that of lxml's copy."""
    element = parsed("<item><a><![CDATA[]]></a><b><![CDATA[]]><![CDATA[]]></b><c/></item>", False)
    names = (b"a", b"b", b"c")
    read = plain_children(element, names, 10**6)  # type: ignore[misc]
    assert read == python_children(element, ("a", "b", "c"))
    assert [copies for _, copies in read] == [b"<a></a>", b"<b></b>", b"<c/>"]
    row = plain_row(element, names, (0,), (0, 1, 2), (0, 0, 0), 10**6)  # type: ignore[misc]
    assert row == ((("",),), (b"<a></a>", b"<b></b>", b"<c/>"), 16 + 7 + 7 + 4)


@needs_kernel
@pytest.mark.parametrize(
    "item, others_read",
    [
        ("<item><a>x<i/>y</a></item>", True),  # an element child
        ("<item><a>x<!--c--></a></item>", True),  # a comment
        ('<item><a id="1">x</a></item>', True),  # an attribute (its copy carries it)
        ('<item><a xmlns:q="urn:q">x</a></item>', True),  # a namespace declared on the child
        ('<item xmlns:q="urn:q"><a>x</a></item>', False),  # ... or in scope (lxml copies it onto the child)
    ],
)
def test_a_child_that_is_not_plain_declines(item: str, others_read: bool) -> None:
    """Reading it declines the whole call; reading only its plain siblings does not."""
    element = parsed(item, False)
    assert plain_children(element, (b"b", b"a"), 10**6) is None  # type: ignore[misc]
    expected = (((), b""),) if others_read else None
    assert plain_children(element, (b"b",), 10**6) == expected  # type: ignore[misc]


@needs_kernel
def test_a_large_text_is_read_whole() -> None:
    text = "x&amp;" * 200_000
    element = parsed(f"<item><a>{text}</a></item>", False)
    ((values, copies),) = plain_children(element, (b"a",), 10**7)  # type: ignore[misc]
    assert values == ("x&" * 200_000,) and copies == b"<a>" + text.encode() + b"</a>"


@needs_kernel
def test_an_attribute_a_dtd_may_default_declines() -> None:
    """``element.get`` answers an attribute's default from the document's DTD, which is not in the
    tree: with a DTD the kernel leaves own attributes to the Python path."""
    element = parsed("<item><a>x</a></item>", False)
    with_dtd = etree.fromstring(
        b'<!DOCTYPE root [<!ATTLIST item id CDATA "d">]><root><item><a>x</a></item></root>'
    )[0]
    assert with_dtd.get("id") == "d"
    assert plain_children(with_dtd, (b"@id", b"a"), 100) is None  # type: ignore[misc]
    assert plain_children(with_dtd, (b"a",), 100) == ((("x",), b"<a>x</a>"),)  # type: ignore[misc]
    assert plain_children(element, (b"@id", b"a"), 100) == (((), b""), (("x",), b"<a>x</a>"))  # type: ignore[misc]


@needs_kernel
def test_a_name_given_twice_is_read_twice() -> None:
    element = parsed("<item><a>x</a><b>y</b><a>z</a></item>", False)
    column = (("x", "z"), b"<a>x</a><a>z</a>")
    assert plain_children(element, (b"a", b"b", b"a"), 100) == (column, (("y",), b"<b>y</b>"), column)  # type: ignore[misc]


@needs_kernel
def test_only_elements_and_byte_names_are_read() -> None:
    with pytest.raises(TypeError, match="not an lxml element: str"):
        plain_children("<item/>", (), 10)  # type: ignore[misc]
    with pytest.raises(TypeError, match="a name is not bytes: str"):
        plain_children(parsed("<item/>", False), ("a",), 10)  # type: ignore[misc]
    comment = parsed("<item><!--c--></item>", False)[0]
    assert plain_children(comment, (b"a",), 10) is None  # type: ignore[misc]


@needs_kernel
def test_copies_past_the_limit_decline_before_they_are_made() -> None:
    """A text of ``&`` grows five times when copied: past the limit nothing is copied and the
    caller's path (which stops copying at its limit) answers."""
    element = parsed("<item>" + "<a>&amp;&amp;</a>" * 3 + "<b>x</b></item>", False)
    copy = len(b"<a>&amp;&amp;</a>")
    assert plain_children(element, (b"a", b"b"), 3 * copy + 8) is not None  # type: ignore[misc]
    assert plain_children(element, (b"a", b"b"), 3 * copy + 7) is None  # type: ignore[misc]
    assert plain_children(element, (b"b", b"@x"), 8) is not None  # type: ignore[misc]


plain_row = kernel.plain_row


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(
    items(),
    st.lists(st.sampled_from(["a", "b", "@id", "@none"]), max_size=4),
    st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([0, 1])), max_size=4),
)
def test_a_whole_row_is_its_columns(item: str, leaves: list[str], fragments: list[tuple[str, int]]) -> None:
    """``plain_row`` gives what the row's columns say: the leaves' values, the fragments' copies or
    values in an attribute (the factory's :func:`attribute_value`), and the row's size; it declines
    where reading the columns declines (None), and past the limit, to the byte (False)."""
    element = parsed(item, False)
    names = tuple(dict.fromkeys([*leaves, *(name for name, _ in fragments)]))
    encoded = tuple(name.encode() for name in names)
    leaf_columns = tuple(names.index(name) for name in leaves)
    fragment_columns = tuple(names.index(name) for name, _ in fragments)
    kinds = tuple(kind for _, kind in fragments)
    columns = plain_children(element, encoded, 10**6)  # type: ignore[misc]
    row = plain_row(element, encoded, leaf_columns, fragment_columns, kinds, 10**6)  # type: ignore[misc]
    if columns is None:
        assert row is None
        return
    values = tuple(columns[column][0] for column in leaf_columns)
    data = tuple(
        columns[column][1] if kind == 0 else attribute_value(columns[column][0])
        for column, kind in zip(fragment_columns, kinds, strict=True)
    )
    size = 16 + sum(len(value) for strings in values for value in strings) + sum(map(len, data))
    assert row == (values, data, size), item
    assert plain_row(element, encoded, leaf_columns, fragment_columns, kinds, size) == row  # type: ignore[misc]
    assert plain_row(element, encoded, leaf_columns, fragment_columns, kinds, size - 1) is False  # type: ignore[misc]


@needs_kernel
def test_a_row_escapes_attribute_values_as_the_factory_does() -> None:
    element = parsed('<item><a>"1" &lt; 2\t&amp; 3\n&#13;&gt;</a><a>é</a></item>', False)
    values, (copies, value), _ = plain_row(element, (b"a",), (0,), (0, 0), (0, 1), 10**6)  # type: ignore[misc]
    assert values == (('"1" < 2\t& 3\n\r>', "é"),)
    assert copies == '<a>"1" &lt; 2\t&amp; 3\n&#13;&gt;</a><a>é</a>'.encode()
    assert value == attribute_value(values[0]) == "&quot;1&quot; &lt; 2&#9;&amp; 3&#10;&#13;> é".encode()


@needs_kernel
def test_a_row_fragment_reads_children_not_attributes() -> None:
    element = parsed('<item id="1"/>', False)
    with pytest.raises(ValueError, match="not an attribute"):
        plain_row(element, (b"@id",), (), (0,), (0,), 100)  # type: ignore[misc]
    for leaves, fragments, kinds in [((1,), (), ()), ((-1,), (), ()), ((), (0,), ()), ((), (), (0,))]:
        with pytest.raises(ValueError, match="plain_row: a"):
            plain_row(element, (b"a",), leaves, fragments, kinds, 100)  # type: ignore[misc]
    with pytest.raises(TypeError, match="not an lxml element"):
        plain_row(None, (), (), (), (), 100)  # type: ignore[misc]


@needs_kernel
def test_text_left_in_several_nodes_is_read_whole() -> None:
    """Text an API call leaves in runs of several nodes (``strip_tags``) reads as lxml reads it: the
    values, the copies, an attribute's value and the clock's text."""
    root = etree.fromstring(b"<item><a>x&amp;<b>y</b>z</a><t>p<q>&lt;</q>r</t></item>")
    etree.strip_tags(root, "b", "q")
    a = root[0]
    row = plain_row(root, (b"a",), (0,), (0, 0), (0, 1), 10**6)  # type: ignore[misc]
    assert row[0] == ((a.text,),) and row[1] == (etree.tostring(a), attribute_value([a.text]))
    assert plain_children(root, (b"a",), 10**6) == (((a.text,), etree.tostring(a)),)  # type: ignore[misc]
    assert kernel.first_named_text(root, b"t")[2] == root[1].text == "p<r"  # type: ignore[misc,index]


class _ChangesTheTree:
    """A cycle whose finalizer rewrites an element's text (only the collector frees it)."""

    def __init__(self, element: etree._Element) -> None:
        self.element, self.cycle = element, self

    def __del__(self) -> None:
        self.element.text = "Y" * 200


@needs_kernel
@pytest.mark.parametrize("read", ["plain_row", "plain_children"])
def test_no_finalizer_runs_while_a_row_is_read(read: str) -> None:
    """A collection set off by the row's own allocations would run finalizers, which may change
    the tree under the kernel's node pointers (a write past a fragment sized before it): the
    collector waits until the row is read, and is on again afterwards."""
    root = etree.fromstring(b"<r><a>x</a></r>")
    threshold = gc.get_threshold()
    gc.collect()
    gc.disable()
    _ChangesTheTree(root[0])
    gc.set_threshold(1)
    gc.enable()
    try:
        if read == "plain_row":
            found = plain_row(root, (b"a",), (0,), (0,) * 25, (0,) * 25, 10**9)  # type: ignore[misc]
            assert found[1] == (b"<a>x</a>",) * 25 and found[2] == 16 + 1 + 25 * 8
        else:
            assert plain_children(root, (b"a",), 10**9) == ((("x",), b"<a>x</a>"),)  # type: ignore[misc]
        assert gc.isenabled()
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
    assert root[0].text == "Y" * 200  # the finalizer ran, after the row


class _Flips:
    """An index that answers differently each time it is read."""

    def __init__(self, *answers: int) -> None:
        self.answers = list(answers)

    def __index__(self) -> int:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def __eq__(self, other: object) -> bool:
        return self.__index__() == other

    __hash__ = None  # type: ignore[assignment]


@needs_kernel
def test_a_row_reads_its_columns_and_kinds_once() -> None:
    """Columns and kinds are read once, checked, and kept: one that answers differently later
    cannot size a fragment as one kind and write it as the other, nor index past the names."""
    element = parsed("<item><a>&amp;&amp;</a></item>", False)
    values, data, size = plain_row(element, (b"a",), (), (0,), (_Flips(1, 0),), 10**6)  # type: ignore[misc]
    assert data == (b"&amp;&amp;",) and size == 16 + len(data[0])
    values, data, size = plain_row(element, (b"a",), (_Flips(0, 40),), (), (), 10**6)  # type: ignore[misc]
    assert values == (("&&",),)


@needs_kernel
@pytest.mark.parametrize(
    "item",
    [
        "<t>Wed, 01 May 2024 08:30:00 GMT</t>",
        '<t at="1">x &amp; &lt;y&gt;</t>',
        "<t/>",
        "<t>&e; and é</t>",
        "<t>a<b>b</b>c</t>",  # an element inside
        "<t>a<!--c-->b</t>",  # a comment inside: two text nodes in XDM, a comment child in lxml
        "<t><![CDATA[x]]></t>",  # text once parsed (CDATA sections are not kept)
        '<t xmlns:p="urn:p">x</t>',  # a namespace in scope
    ],
)
def test_an_element_s_own_string_value_is_lxmls_or_declined(item: str) -> None:
    """``.`` (an event-time path's leaf): the element's own text where it holds nothing but text,
    its attributes aside; anything else inside, or a namespace in scope, declines."""
    element = parsed(item, False)
    row = plain_row(element, (b".",), (0,), (), (), 10**6)  # type: ignore[misc]
    columns = plain_children(element, (b".", b"x"), 10**6)  # type: ignore[misc]
    plain = len(element) == 0 and not element.nsmap
    if not plain:
        assert row is None and columns is None
        return
    value = element_string(element)
    assert row == (((value,),), (), 16 + len(value))
    assert columns == (((value,), b""), ((), b""))


@needs_kernel
def test_an_element_s_own_string_value_is_a_leaf_never_a_fragment() -> None:
    with pytest.raises(ValueError, match="not an attribute or the element"):
        plain_row(parsed("<t>x</t>", False), (b".",), (), (0,), (0,), 100)  # type: ignore[misc]


@st.composite
def trees_of_names(draw: st.DrawFn) -> str:
    """Elements named a, b, c (some prefixed, some under a default namespace) nested at random,
    with text, comments, processing instructions and references between them."""

    def element(depth: int) -> str:
        name = draw(st.sampled_from(["a", "b", "c", "p:a", "q:b"]))
        default = draw(st.sampled_from(["", "", "", ' xmlns="urn:d"']))
        parts = []
        if depth < 4:
            for _ in range(draw(st.integers(0, 3))):
                parts.append(draw(st.sampled_from(["", "t", "<!--a-->", "<?a b?>", "&amp;"])))
                parts.append(element(depth + 1))
        return f"<{name}{default}>{''.join(parts)}</{name}>"

    return f'<r xmlns:p="urn:p" xmlns:q="urn:q">{element(0)}</r>'


@needs_kernel
@given(trees_of_names(), st.sampled_from(["a", "b", "c", "r", "z"]))
@settings(max_examples=200, deadline=None)
def test_the_first_element_of_a_name_is_lxmls_first_with_its_pre_order_id(document: str, name: str) -> None:
    """``first_named`` finds what ``root.iter(etree.Element)`` meets first with that tag (no
    namespace), numbered as it counts elements."""
    root = etree.fromstring(document.encode())
    expected = next(((i, el) for i, el in enumerate(root.iter(etree.Element)) if el.tag == name), None)
    found = kernel.first_named(root, name.encode())  # type: ignore[misc]
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:
        assert found[0] == expected[0] and found[1] is expected[1]


@needs_kernel
@given(trees_of_names(), st.sampled_from(["a", "b", "c", "r", "z"]))
@settings(max_examples=200, deadline=None)
def test_the_first_element_of_a_name_comes_with_its_text_where_it_holds_text_alone(
    document: str, name: str
) -> None:
    """``first_named_text`` finds what ``first_named`` finds, with the element's string value where
    nothing but text is inside (no element, comment, processing instruction or reference), else
    None (the caller reads it the general way)."""
    root = etree.fromstring(document.encode())
    found = kernel.first_named_text(root, name.encode())  # type: ignore[misc]
    expected = kernel.first_named(root, name.encode())  # type: ignore[misc]
    assert (found is None) == (expected is None)
    if found is None or expected is None:
        return
    node, element, text = found
    assert node == expected[0] and element is expected[1]
    text_alone = len(element) == 0
    assert text == (element_string(element) if text_alone else None)


@needs_kernel
def test_the_text_of_the_first_element_of_a_name_is_read_whole() -> None:
    root = etree.fromstring("<r><t>Wed, 01 May 2024 GMT</t><t>x</t><u/><v>é &amp; &lt;</v></r>".encode())

    def text(name: bytes) -> str | None:
        found = kernel.first_named_text(root, name)  # type: ignore[misc]
        return None if found is None else found[2]

    assert [text(b"t"), text(b"u"), text(b"v"), text(b"w")] == ["Wed, 01 May 2024 GMT", "", "é & <", None]


@needs_kernel
@given(trees_of_names(), st.sampled_from(["a", "b", "c", "r", "z"]))
@settings(max_examples=200, deadline=None)
def test_every_element_of_a_name_is_what_lxml_meets_with_its_pre_order_id(document: str, name: str) -> None:
    """``all_named`` finds every element ``root.iter(etree.Element)`` meets with that tag (no
    namespace), in its order and numbered as it counts elements."""
    root = etree.fromstring(document.encode())
    expected = [(i, el) for i, el in enumerate(root.iter(etree.Element)) if el.tag == name]
    found = kernel.all_named(root, name.encode())  # type: ignore[misc]
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert all(a is b for (_, a), (_, b) in zip(found, expected, strict=True))


@needs_kernel
@pytest.mark.parametrize("search", ["first_named", "first_named_text", "all_named"])
def test_the_searches_by_name_refuse_anything_but_an_element_and_a_bytes_name(search: str) -> None:
    find = getattr(kernel, search)
    for bad in (None, "r", etree.Comment("c")):
        with pytest.raises(TypeError):
            find(bad, b"r")
    for name in (None, "r"):  # the name is read as a C string: bytes only
        with pytest.raises(TypeError):
            find(etree.fromstring(b"<r/>"), name)


#: what ``walked_rows`` reads of each element in the tests: two children's values, a copy of one
WALKED_NAMES, WALKED_LEAVES, WALKED_FRAGMENTS, WALKED_KINDS = (b"b", b"c"), (0, 1), (0,), (0,)


def walked_reference(
    root: etree._Element, name: str, first: bool
) -> tuple[list[tuple[int, object, object]], int, int, list[tuple[int, etree._Element]]]:
    """What ``walked_rows`` gives, made of the kernel's parts: ``all_named`` (or its first), a
    ``plain_row`` per element until the first one it declines, each element's ``len`` charged once."""
    found = kernel.all_named(root, name.encode())  # type: ignore[misc]
    if first:
        found = found[:1]
    rows: list[tuple[int, object, object]] = []
    size = units = 0
    for at, (node, element) in enumerate(found):
        row = kernel.plain_row(  # type: ignore[misc]
            element, WALKED_NAMES, WALKED_LEAVES, WALKED_FRAGMENTS, WALKED_KINDS, 10**9
        )
        if row is None:
            return rows, size, units, found[at:]
        units += len(element)
        rows.append((node, row[0], row[1]))
        size += row[2]
    return rows, size, units, []


def walked(root: etree._Element, name: str, first: bool, limit: int, work: int, charged: set) -> tuple:
    return kernel.walked_rows(  # type: ignore[misc]
        root,
        name.encode(),
        first,
        WALKED_NAMES,
        WALKED_LEAVES,
        WALKED_FRAGMENTS,
        WALKED_KINDS,
        limit,
        charged,
        work,
        True,
        tuple,
    )


@needs_kernel
@given(trees_of_names(), st.sampled_from(["a", "b", "c", "r", "z"]), st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_walked_block_s_rows_are_its_elements_plain_rows(document: str, name: str, first: bool) -> None:
    """``walked_rows`` gives in one walk what ``all_named`` and a ``plain_row`` per element give:
    the rows up to the first element the kernel declines, the rest handed back from it, each read
    element's children charged once (a second walk with the same set charges nothing); past the
    limit or past the work left, no rows."""
    root = etree.fromstring(document.encode())
    rows, size, units, rest = walked_reference(root, name, first)
    charged: set = set()
    found = walked(root, name, first, 10**9, 10**9, charged)
    assert found[0] == rows and found[1:3] == (size, units)
    assert [(node, id(element)) for node, element in found[3]] == [
        (node, id(element)) for node, element in rest
    ]
    assert walked(root, name, first, 10**9, 10**9, charged)[1:3] == (size, 0)
    if rows:
        assert walked(root, name, first, size - 1, 10**9, set())[0] is None
    if units:
        assert walked(root, name, first, 10**9, units - 1, set())[0] is None


@needs_kernel
def test_a_walked_block_s_rows_take_their_type_and_check_their_arguments() -> None:
    root = etree.fromstring(b"<r><a><b>x</b><c>y</c></a></r>")
    rows = walked(root, "a", False, 10**6, 10**6, set())[0]
    assert rows == [(1, (("x",), ("y",)), (b"<b>x</b>",))]
    for bad in (None, "r", etree.Comment("c")):
        with pytest.raises(TypeError):
            walked(bad, "a", False, 10**6, 10**6, set())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="plain_row: a column"):
        kernel.walked_rows(root, b"a", False, (b"b",), (3,), (), (), 100, set(), 100, True, tuple)  # type: ignore[misc]


@st.composite
def plain_items(draw: st.DrawFn) -> str:
    """Items whose children are mostly plain (text beyond ASCII, escapes, a child twice, empty
    ones, an own attribute), some not (an element or a comment inside), no namespace in scope."""
    text = st.sampled_from(["", "x", "Zürich ✓", "a&amp;b", "1 &lt; 2 &gt; 0", "tab\there", "<![CDATA[]]>"])
    items = []
    for _ in range(draw(st.integers(0, 4))):
        children = []
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["b", "c", "b/", "c/", "text", "d", "inner", "comment"]))
            if kind in ("b", "c"):
                children.append(f"<{kind}>{draw(text)}</{kind}>")
            elif kind.endswith("/"):
                children.append(f"<{kind}>")
            elif kind == "text":
                children.append(draw(text))
            elif kind == "d":
                children.append(f"<d>{draw(text)}</d>")
            else:
                children.append("<b><e/></b>" if kind == "inner" else "<c><!--n--></c>")
        attribute = draw(st.sampled_from(["", ' k="v"', ' k="ü &amp; &#10;"', ' j="w"']))
        items.append(f"<a{attribute}>{''.join(children)}</a>")
    return f"<r>{''.join(items)}<b>{draw(text)}</b></r>"


#: a row read two ways: child values and attributes with copies and values in an attribute; and
#: the element's own text
PACKED_CONFIGS = {
    "children": ("a", (b"b", b"c", b"@k"), (0, 1, 2), (0, 1), (0, 1)),
    "own text": ("b", (b".",), (0,), (), ()),
}


def _packed_arrays() -> tuple[array[int], ...]:
    """A batch's arrays with rows of an earlier message in them already (kept as they are)."""
    arrays = tuple(array(code) for code in "qqBqqBq")
    earlier_rows: tuple[Any, ...] = ([0, 9, 1], [0, 9, 1, 1], b"earlier", [7], [0, 9, 1], b"<f/>", [4])
    for numbers, earlier in zip(arrays, earlier_rows, strict=True):
        numbers.extend(earlier)
    return arrays


@needs_kernel
@given(plain_items(), st.sampled_from(sorted(PACKED_CONFIGS)), st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_walked_block_packs_into_a_batch_what_its_rows_keep(
    document: str, config: str, first: bool
) -> None:
    """``walked_into`` packs into a batch's arrays exactly what ``keep_batch`` packs of the rows
    ``walked_rows`` reads (their UTF-8 as it is, a value's size in characters), with the same
    size, charge and rest (and where the arrays stood when the rest is not empty); past the limit
    or the work left it packs nothing, the rows already in the arrays kept."""
    name, names, leaves, fragments, kinds = PACKED_CONFIGS[config]
    root = etree.fromstring(document.encode())
    arguments = (root, name.encode(), first, names, leaves, fragments, kinds)
    rows, size, units, rest = kernel.walked_rows(*arguments, 10**9, set(), 10**9, True, tuple)  # type: ignore[misc]
    code = (0, tuple(range(len(leaves))), tuple(range(len(fragments))))
    kept = _packed_arrays()
    named = {"p": (tuple(f"l{i}" for i in leaves), tuple(f"f{i}" for i in range(len(fragments))))}
    kernel.keep_batch([{"p": rows}], named, {}, {}, {}, {}, *kept)  # type: ignore[misc]
    packed = _packed_arrays()
    count, found_size, found_units, found_rest, mark = kernel.walked_into(  # type: ignore[misc]
        (*arguments, 10**9, set(), 10**9, True), 0, code, packed
    )
    assert packed == kept and count == len(rows) and (found_size, found_units) == (size, units)
    assert [(node, id(el)) for node, el in found_rest] == [(node, id(el)) for node, el in rest]
    assert (mark is None) == (not rest) and (mark is None or mark == tuple(map(len, _packed_arrays())))
    for limit, work in ((size - 1, 10**9), (10**9, units - 1)):
        if (limit < size and rows) or (units and work < units):
            untouched = _packed_arrays()
            answer = kernel.walked_into((*arguments, limit, set(), work, True), 0, code, untouched)  # type: ignore[misc]
            assert answer[0] is None and untouched == _packed_arrays()


@needs_kernel
def test_walked_into_checks_its_batch() -> None:
    root = etree.fromstring("<r><a><b>Zürich</b><c>y</c></a></r>".encode())
    arguments = ((root, b"a", False, (b"b", b"c"), (0, 1), (1,), (0,), 100, set(), 100, True), 5)
    packed = tuple(array(code) for code in "qqBqqBq")
    assert kernel.walked_into(*arguments, (2, (3, 4), (6,)), packed)[:2] == (1, 16 + 6 + 1 + 8)  # type: ignore[misc]
    with pytest.raises(ValueError, match="eleven first arguments"):
        kernel.walked_into(arguments[0][:10], 5, (2, (3, 4), (6,)), packed)  # type: ignore[misc]
    for at in (1, 3, 4, 8):  # the name, the names, the leaves, the charged set: None or another type
        for bad in (None, "x"):
            walk = (*arguments[0][:at], bad, *arguments[0][at + 1 :])
            with pytest.raises(TypeError, match="walk holds"):
                kernel.walked_into(walk, 5, (2, (3, 4), (6,)), packed)  # type: ignore[misc]
    with pytest.raises(TypeError, match="a plan's code"):
        kernel.walked_into(arguments[0], 5, (2, None, (6,)), packed)  # type: ignore[misc]
    assert list(packed[0]) == [2, 5, 1] and list(packed[1]) == [3, 5, 1, 1, 4, 5, 1, 1]
    assert bytes(packed[2]).decode() == "Zürichy" and list(packed[3]) == [7, 8]
    assert list(packed[4]) == [6, 5, 1] and bytes(packed[5]) == b"<c>y</c>" and list(packed[6]) == [8]
    with pytest.raises(ValueError, match="7 arrays"):
        kernel.walked_into(*arguments, (2, (3, 4), (6,)), packed[:6])  # type: ignore[misc]
    with pytest.raises(TypeError, match="array"):
        kernel.walked_into(*arguments, (2, (3, 4), (6,)), (array("B"), *packed[1:]))  # type: ignore[misc]
    with pytest.raises(ValueError, match="a code per leaf"):
        kernel.walked_into(*arguments, (2, (3,), (6,)), packed)  # type: ignore[misc]
