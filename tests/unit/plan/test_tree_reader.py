"""Return items read off the tree (feedrouter.plan.results.TreeReader, what join witness rows use)
give exactly the values and copies of the general path: the GroupBy of each path's stream."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import Router
from feedrouter.engine.runtime import run
from feedrouter.output.factory import render_items_within
from feedrouter.plan.context import DocumentContext, element_string
from feedrouter.plan.results import TreeReader

PROLOG = 'declare namespace p = "urn:p";\n'
RETURNS = [
    "{ $v/a }",  # one child step
    "{ $v/a/b }",  # two: every child's children, document order
    "{ $v/b/a/c }",
    "{ $v/p:a }",  # a name in a namespace (and not its no-namespace namesake)
    "{ $v/@id }",  # the bound node's attribute
    "{ $v/@* }",  # every attribute
    "{ $v/a/text() }",  # text nodes, split by comments and children
    "{ $v/text() }",
    "{ $v }",  # the bound node itself
]
FORMS = [f"for $v in //{anchor} return <r>{ret}</r>" for anchor in ("a", "b", "p:a") for ret in RETURNS]
VALUES = ("b", "@id", "a/text()", "a/@id", "@p:id", "a/@*")  # attribute value templates: values joined
FORMS += [f'for $v in //a return <r k="{{ $v/{path} }}"/>' for path in VALUES]

tags = st.sampled_from(["a", "b", "c", "p:a"])
texts = st.sampled_from(["", "x", "a &amp; b", "<![CDATA[<c>]]>", " ", "é"])
extras = st.sampled_from(["", "<!--n-->", "<?pi d?>", ' id="1"', ' p:id="2"', ' id="3" p:id="4"'])


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(tags)
    extra = draw(extras)
    attributes = extra if extra.startswith(" ") else ""
    inner = "" if attributes else extra
    children = draw(st.lists(trees(depth + 1), max_size=3)) if depth < 4 else []
    body = draw(texts) + inner + "".join(child + draw(texts) for child in children)
    return f"<{tag}{attributes}>{body}</{tag}>"


ROUTER = Router.compile([(str(i), PROLOG + form) for i, form in enumerate(FORMS)], optimize="none")


def context(document: bytes) -> DocumentContext:
    parser = ROUTER._parser
    return DocumentContext(run(ROUTER._dfa, parser.events(document, None), parser.limits.max_depth))


def test_every_form_here_is_read_off_the_tree() -> None:
    for sid in ROUTER.subscription_ids:
        assert all(item.tree_reader is not None for item in ROUTER._plans[sid].returns), sid


def test_paths_with_predicates_wildcards_or_descendants_are_not() -> None:
    router = Router.compile(
        [
            ("1", "for $v in //a return <r>{ $v/b[c] }</r>"),
            ("2", "for $v in //a return <r>{ $v/* }</r>"),
            ("3", "for $v in //a return <r>{ $v//b }</r>"),
            ("4", "for $v in //a return <r>{ $v/parent::*/b }</r>"),
        ]
    )
    for sid in router.subscription_ids:
        assert [item.tree_reader for item in router._plans[sid].returns] == [None], sid


@settings(max_examples=200, deadline=None)
@given(trees())
def test_values_and_copies_are_the_general_paths(document: str) -> None:
    text = f'<root xmlns:p="urn:p">{document}</root>'.encode()
    ctx = context(text)
    for element in ctx.nodes:  # the values of both paths take the text shortcut: XPath decides it
        assert element_string(element) == element.xpath("string()"), document
    for sid in ROUTER.subscription_ids:
        plan = ROUTER._plans[sid]
        for bound in plan.bindings(ctx):
            element = ctx.nodes[bound]
            for item in plan.returns:
                reader = item.tree_reader
                assert isinstance(reader, TreeReader)
                assert reader.values(ctx, element) == item.values(ctx, bound), (sid, document)
                general = render_items_within(item.select(ctx, bound), ctx, 10**6)
                assert reader.copies(ctx, element, 10**6) == general, (sid, document)


def test_copies_past_the_limit_are_refused() -> None:
    ctx = context(b"<root><a><b>12345</b><b>67890</b></a></root>")
    (item,) = ROUTER._plans["1"].returns  # for $v in //a return { $v/a/b }
    reader = TreeReader(("b",))
    assert reader.copies(ctx, ctx.nodes[1], 24) == b"<b>12345</b><b>67890</b>"
    assert reader.copies(ctx, ctx.nodes[1], 23) is None
    assert TreeReader(("b",), value=True).copies(ctx, ctx.nodes[1], 11) == b"12345 67890"
    assert TreeReader(("b",), value=True).copies(ctx, ctx.nodes[1], 10) is None
    assert item.tree_reader == TreeReader(("a", "b"))
