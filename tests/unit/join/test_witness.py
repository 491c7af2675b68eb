"""Witness rows (feedrouter.join.witness): a plain child's values, copies and values in an
attribute are read by name off the node's children; every row is what the general path gives (the
items' own values and the message factory's copies), and a row past its limit is refused."""

from __future__ import annotations

import contextlib
import pickle
from dataclasses import replace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from feedrouter import Router, kernel
from feedrouter.engine.runtime import run
from feedrouter.errors import DocumentError
from feedrouter.join import witness
from feedrouter.join.plan import BlockSpec, clock_block
from feedrouter.join.witness import WitnessRow, witness_rows
from feedrouter.limits import ResultLimits
from feedrouter.output.factory import attribute_value, render_items_within
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.results import ReturnItem
from tests.unit.join.support import join_set
from tests.unit.kernel.test_children import items, needs_kernel
from tests.unit.plan.test_tree_reader import PROLOG, trees

#: the items a witness plan returns: leaves first (values), then fragments (copies or a value)
LEAVES = ("$v/a", "$v/p:a", "$v/@id", "$v/a/b", "$v/c/text()", "$v")
COPIES = ("$v/a", "$v/p:a", "$v/b", "$v/@id", "$v/a/text()", "$v/c/a")
VALUES = ("$v/a", "$v/b")  # in an attribute: the values joined by spaces


ANCHORS = ("a", "b", "p:a")


def plan_text(anchor: str) -> str:
    body = "".join(f"<l>{{ {path} }}</l>" for path in LEAVES + COPIES)
    attributes = "".join(f' v{i}="{{ {path} }}"' for i, path in enumerate(VALUES))
    return f"{PROLOG}for $v in //{anchor} return <r{attributes}>{body}</r>"


ROUTER = Router.compile([(anchor, plan_text(anchor)) for anchor in ANCHORS], optimize="none")


def plan_returns(anchor: str) -> list[ReturnItem]:
    """The return items of the plan over ``//anchor``: LEAVES, then COPIES, then VALUES."""
    returns = ROUTER._plans[anchor].returns  # the attribute's items come first
    assert len(returns) == len(LEAVES) + len(COPIES) + len(VALUES)
    assert [item.value for item in returns] == [True] * len(VALUES) + [False] * (len(LEAVES) + len(COPIES))
    return [*returns[len(VALUES) :], *returns[: len(VALUES)]]


PLANS = {anchor: plan_returns(anchor) for anchor in ANCHORS}


def context(document: bytes) -> DocumentContext:
    parser = ROUTER._parser
    return DocumentContext(run(ROUTER._dfa, parser.events(document, None), parser.limits.max_depth))


def general_row(ctx: DocumentContext, returns: list[ReturnItem], node: int) -> WitnessRow:
    """The row as the items' general path gives it (their streams' GroupBy, the message factory)."""
    leaves = returns[: len(LEAVES)]
    copies = returns[len(LEAVES) : len(LEAVES) + len(COPIES)]
    values = returns[len(LEAVES) + len(COPIES) :]
    return WitnessRow(
        node,
        tuple(tuple(item.values(ctx, node)) for item in leaves),
        (
            *(render_items_within(item.select(ctx, node), ctx, 10**6) or b"" for item in copies),
            *(attribute_value(item.values(ctx, node)) for item in values),
        ),
    )


def read_rows(
    ctx: DocumentContext, returns: list[ReturnItem], bound: list[int], limit: int
) -> list[WitnessRow] | None:
    fragments = len(returns) - len(LEAVES)
    found = witness_rows(returns, len(LEAVES), ("",) * fragments, ctx, bound, limit)
    return None if found is None else found[0]


@settings(max_examples=200, deadline=None)
@given(trees())
def test_rows_are_what_the_general_path_gives(document: str) -> None:
    text = f'<root xmlns:p="urn:p">{document}</root>'.encode()
    for anchor, returns in PLANS.items():
        ctx = context(text)
        bound = ROUTER._plans[anchor].bindings(ctx)
        rows = read_rows(ctx, returns, bound, 10**6)
        assert rows == [general_row(context(text), returns, node) for node in bound], (anchor, document)


@st.composite
def plain_trees(draw: st.DrawFn, depth: int = 0) -> str:
    """Trees without namespaces (the kernel reads their plain children): text, comments and
    attributes here and there, so that rows mix plain children and others."""
    tag = draw(st.sampled_from(["a", "b", "c"]))
    attribute = draw(st.sampled_from(["", "", ' id="1"', ' id="x &amp; y"']))
    children = draw(st.lists(plain_trees(depth + 1), max_size=3)) if depth < 3 else []
    text = st.sampled_from(["", "", "x", "a &amp; b", "<![CDATA[<c>]]>", "é", "<!--n-->"])
    body = draw(text) + "".join(child + draw(text) for child in children)
    return f"<{tag}{attribute}>{body}</{tag}>"


@settings(max_examples=200, deadline=None)
@given(plain_trees())
def test_rows_without_namespaces_are_what_the_general_path_gives(document: str) -> None:
    """No namespace in scope: the compiled kernel reads the plain children (where it is built)."""
    text = f"<root>{document}</root>".encode()
    for anchor in ("a", "b"):
        returns = PLANS[anchor]
        ctx = context(text)
        bound = ROUTER._plans[anchor].bindings(ctx)
        rows = read_rows(ctx, returns, bound, 10**6)
        assert rows == [general_row(context(text), returns, node) for node in bound], (anchor, document)


#: a plan whose every leaf and fragment the kernel reads: leaves @id, a, b; copies of a and c and
#: b's values in an attribute
PLAIN_ROUTER = Router.compile(
    [
        (
            "item",
            'for $v in //item return <r k="{ $v/b }"><l>{ $v/@id }{ $v/a }{ $v/b }</l>{ $v/a }{ $v/c }</r>',
        )
    ],
    optimize="none",
)
_value, *_items = PLAIN_ROUTER._plans["item"].returns
PLAIN_RETURNS = [*_items, _value]


def plain_context(document: bytes) -> DocumentContext:
    parser = PLAIN_ROUTER._parser
    return DocumentContext(run(PLAIN_ROUTER._dfa, parser.events(document, None), parser.limits.max_depth))


def plain_rows(document: bytes, limit: int) -> tuple[list[WitnessRow] | None, int]:
    """The rows of every ``item`` and the work charged for them."""
    ctx = plain_context(document)
    bound = PLAIN_ROUTER._plans["item"].bindings(ctx)
    before = ctx.work
    found = witness_rows(PLAIN_RETURNS, 3, ("",) * 3, ctx, bound, limit)
    return (None if found is None else found[0]), ctx.work - before


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(st.lists(items(), min_size=1, max_size=3), st.integers(-40, 2))
def test_rows_the_kernel_reads_whole_are_the_python_paths(found: list[str], margin: int) -> None:
    """The kernel's whole-row path gives the Python path's rows, refuses exactly the rows it
    refuses whatever the limit, and charges the document's work budget the same."""
    assert witness._row_reader(tuple(PLAIN_RETURNS), 3, ("",) * 3).plain is not None
    body = "".join(found)
    doctype = '<!DOCTYPE root [<!ENTITY e "E&amp;e">]>' if "&e;" in body else ""
    declared = ' xmlns:p="urn:p"' if "p:" in body else ""
    document = f"{doctype}<root{declared}>{body}</root>".encode()
    with kernel.turned_off():
        python, python_work = plain_rows(document, 10**6)
    assert python is not None
    size = len(python) * 16 + sum(
        sum(len(v) for values in row.values for v in values) + sum(map(len, row.fragments)) for row in python
    )
    for limit in (10**6, size + margin):
        rows, work = plain_rows(document, limit)
        with kernel.turned_off():
            expected, _ = plain_rows(document, limit)
        assert rows == expected, (document, limit)
        assert rows is None or work == python_work


@needs_kernel
def test_plain_rows_are_read_by_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where every child a row reads is plain, one kernel call reads them all; where one is not,
    the row is still the general path's."""
    calls: list[tuple[bytes, ...]] = []

    def counted(element: etree._Element, names: tuple[bytes, ...], limit: int) -> object:
        calls.append(names)
        return compiled(element, names, limit)  # type: ignore[misc]

    compiled = kernel.plain_children
    monkeypatch.setattr(kernel, "plain_children", counted)
    for document in (
        b'<root><a id="1"><a>x</a><b>y</b><b>z</b></a></root>',
        b"<root><a><b>y<c/></b></a></root>",
    ):
        ctx = context(document)
        (row,) = read_rows(ctx, PLANS["a"], [1], 10**6) or []
        assert row == general_row(context(document), PLANS["a"], 1)
    assert calls and all(names == calls[0] for names in calls) and b"@id" in calls[0]


def test_the_plain_children_are_read_by_name() -> None:
    """The fast path is the one taken: a plain child's leaf, copies and value never go through the
    general path's per-item cache."""
    ctx = context(b'<root><a id="1"><a>x</a><b>y</b><b>z</b></a></root>')
    returns = PLANS["a"]
    (row,) = read_rows(ctx, returns, [1], 10**6) or []
    assert row.values[0] == ("x",)
    assert row.fragments[0] == b"<a>x</a>"  # $v/a
    assert row.fragments[2] == b"<b>y</b><b>z</b>"  # $v/b
    assert row.fragments[len(COPIES)] == b"x" and row.fragments[len(COPIES) + 1] == b"y z"
    general = {key[0] for key in ctx.caches.witness_fragments}
    plain = {returns[len(LEAVES) + i] for i in (0, 2)} | set(returns[len(LEAVES) + len(COPIES) :])
    assert general and not general & plain


def test_a_row_past_its_limit_is_refused() -> None:
    data = b"<root><a><a>12345</a><b>67890</b><b>abcde</b></a></root>"
    returns = PLANS["a"]
    (row,) = read_rows(context(data), returns, [1], 10**6) or []
    _, size = witness._row_reader(tuple(returns), len(LEAVES), ("",) * (len(returns) - len(LEAVES))).row(
        context(data), 1, 10**6
    ) or (None, 0)
    assert size == 16 + sum(map(len, (v for values in row.values for v in values))) + sum(
        map(len, row.fragments)
    )
    assert read_rows(context(data), returns, [1], size) == [row]
    assert read_rows(context(data), returns, [1], size - 1) is None
    for cut in range(16, size, 7):  # wherever the limit falls: refused, never a partial row
        assert read_rows(context(data), returns, [1], cut) is None


def test_copying_many_children_stops_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node with thousands of children of one name: past the limit the row is refused before
    the rest are copied."""
    ctx = context(b"<root><a>" + b"<b>x</b>" * 5000 + b"</a></root>")
    copies = 0
    tostring = etree.tostring

    def counted(*args: Any, **kwargs: Any) -> bytes:
        nonlocal copies
        copies += 1
        return cast(bytes, tostring(*args, **kwargs))

    monkeypatch.setattr(etree, "tostring", counted)
    assert read_rows(ctx, PLANS["a"], [1], 200) is None
    assert 0 < copies < 40


@needs_kernel
def test_rows_are_the_same_with_the_kernel_turned_off() -> None:
    document = b'<root><a id="1"><a>x &amp; y</a><b>y</b><b/><c>z</c></a><a><b>q<c/></b></a></root>'
    bound = ROUTER._plans["a"].bindings(context(document))
    rows = read_rows(context(document), PLANS["a"], bound, 10**6)
    compiled = kernel.plain_children, kernel.plain_row
    with kernel.turned_off():
        assert kernel.plain_children is None and kernel.plain_row is None
        assert read_rows(context(document), PLANS["a"], bound, 10**6) == rows
    assert (kernel.plain_children, kernel.plain_row) == compiled


@needs_kernel
def test_a_row_whose_every_item_is_plain_takes_one_kernel_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    compiled = kernel.plain_row

    def counted(*args: Any) -> object:
        calls.append(args[1])
        return compiled(*args)  # type: ignore[misc]

    def refused(*args: Any) -> object:
        raise AssertionError("the columns are read by plain_row alone")

    monkeypatch.setattr(kernel, "plain_row", counted)
    monkeypatch.setattr(kernel, "plain_children", refused)
    rows, _ = plain_rows(b'<root><item id="7"><a>x</a><b>y</b></item><item><c>z</c></item></root>', 10**6)
    assert rows is not None and len(rows) == len(calls) == 2


#: a block that reads only the bound node's own attribute (an event time in ``@at``, say)
ATTRIBUTE_ROUTER = Router.compile([("item", "for $v in //item return <r>{ $v/@id }</r>")], optimize="none")


@needs_kernel
def test_a_row_of_own_attributes_charges_the_same_work_with_or_without_the_kernel() -> None:
    """Reading ``@id`` walks no children on either path, so neither charges a walk: a document's
    budget does not depend on the kernel."""
    document = b'<root><item id="1"><a>x</a><a>y</a><a>z</a></item></root>'
    returns = ATTRIBUTE_ROUTER._plans["item"].returns
    assert witness._row_reader(tuple(returns), 1, ()).plain is not None

    def read() -> tuple[object, int]:
        parser = ATTRIBUTE_ROUTER._parser
        events = parser.events(document, None)
        ctx = DocumentContext(run(ATTRIBUTE_ROUTER._dfa, events, parser.limits.max_depth))
        bound = ATTRIBUTE_ROUTER._plans["item"].bindings(ctx)
        before = ctx.work
        found = witness_rows(returns, 1, (), ctx, bound, 10**6)
        return found, ctx.work - before

    with kernel.turned_off():
        expected = read()
    assert expected[0] == ([WitnessRow(1, (("1",),), ())], 17)
    assert read() == expected


def as_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routers compiled from now on make every block a witness plan (nothing read off the tree):
    the reference the blocks read off the tree are compared with."""
    monkeypatch.setattr("feedrouter.router._first_element", lambda spec: None)
    monkeypatch.setattr("feedrouter.router._walked_element", lambda spec: None)


def clock_router(
    *others: BlockSpec, limits: ResultLimits | None = None, path: str = "//time", dtd: str | None = None
) -> tuple[Router, str]:
    clock = clock_block("f", path)
    router = Router.compile([], on_error="collect", result_limits=limits, dtd=dtd)
    for spec in (clock, *others):
        router.add_witness(spec)
    router.reindex()
    return router, clock.id


@pytest.mark.parametrize("turned_off", [False, True])
def test_the_clock_reads_the_first_node_only(turned_off: bool) -> None:
    """A message's time is its event-time path's first value: of a bulk message's 3,000 event
    times the clock reads the first (their rows would take 63 KB of the document's result budget
    and past it leave the message without a time); a block of the same plan reads every node."""
    every = replace(clock_block("f", "//time"), id="block-every-time", first=False)
    document = b"<m>" + b"".join(b"<time>t%04d</time>" % i for i in range(3000)) + b"</m>"
    roomy, clock = clock_router(every)
    tight, _ = clock_router(limits=ResultLimits(per_subscription=1000, per_document=1000))
    with kernel.turned_off() if turned_off else contextlib.nullcontext():
        found = roomy.route_outcome(document).witnesses
        alone = tight.route_outcome(document)
    assert found[clock] == [WitnessRow(1, (("t0000",),), ())]
    assert len(found[every.id]) == 3000 and found[every.id][2999] == WitnessRow(3000, (("t2999",),), ())
    assert alone.witnesses[clock] == [WitnessRow(1, (("t0000",),), ())] and not alone.failures


@needs_kernel
@pytest.mark.parametrize(
    "document",
    [
        b"<m><time>Wed, 01 May 2024 08:30:00 GMT</time><time/></m>",
        b'<m><time zone="x">a &amp; b</time></m>',
        b"<m><time>a<!--c--> b</time><time>x<b>y</b>z</time></m>",  # not text only: declined
        b'<m xmlns:p="urn:p"><time>t</time></m>',  # a namespace in scope: declined
    ],
)
def test_an_event_time_is_read_by_the_kernel_as_by_the_python_path(
    document: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock the router reads through its witness plan (a path not of the form ``//name``): its
    leaf is the bound node's own string value, one kernel call per node where it holds only text,
    the Python path where the kernel declines, the same rows either way."""
    router, clock = clock_router(path="/m/time")
    with kernel.turned_off():
        expected = router.route_outcome(document).witnesses[clock]
    answers = []
    compiled = kernel.plain_row

    def counted(*args: Any) -> object:
        answers.append(compiled(*args))  # type: ignore[misc]
        return answers[-1]

    monkeypatch.setattr(kernel, "plain_row", counted)
    assert router.route_outcome(document).witnesses[clock] == expected
    plain = b"<!--" not in document and b"xmlns" not in document
    assert len(answers) == len(expected) and all((answer is not None) == plain for answer in answers)


def test_a_router_pickled_before_blocks_said_first_reads_every_node() -> None:
    """Routers pickled before a block's shape said whether it reads its first node only hold two
    fields per block: they read every node, as they did."""
    router, clock = clock_router(path="/m/time")
    router._witnesses = {block: shape[:2] for block, shape in router._witnesses.items()}
    router = pickle.loads(pickle.dumps(router))
    rows = router.route_outcome(b"<m><time>a</time><time>b</time></m>").witnesses[clock]
    assert [row.values for row in rows] == [(("a",),), (("b",),)]


def test_blocks_added_to_a_router_pickled_before_join_blocks_are_its_own() -> None:
    """A router pickled before routers had join blocks gets tables of its own when unpickled:
    a block added to it is not added to every other such router (nor to the class's defaults)."""
    old = []
    for _ in range(2):
        router = Router.compile([("o", "//item/title")], on_error="collect")
        state = router.__getstate__()
        for name in ("_witnesses", "_witness_specs"):
            state.pop(name, None)
        unpickled = Router.__new__(Router)
        unpickled.__setstate__(state)
        old.append(unpickled)
    (spec,) = [spec for spec in join_set(SHARED_JOIN).specs.values() if spec.where]
    old[0].add_witness(spec)
    assert spec.id in old[0].witness_blocks and spec.id in old[0].route_outcome(SHARED_DOCUMENT).witnesses
    assert not old[1].witness_blocks and not old[1].route_outcome(SHARED_DOCUMENT).witnesses
    assert Router._witnesses == {} and Router._witness_specs == {}


#: documents whose first ``time`` element the clock reads: text, none, empty, mixed content,
#: comments, CDATA, references, namespaced namesakes before it, the root itself, deep nesting
CLOCK_DOCUMENTS = [
    b"<m><time>Wed, 01 May 2024 08:30:00 GMT</time><time>later</time></m>",
    b"<m><x/></m>",
    b"<time>the root itself<time>inner</time></time>",
    b"<m><time/><time>second</time></m>",
    b"<m><a><b><c><time>deep</time></c></b></a><time>shallow, later</time></m>",
    b"<m><time>a<!--c--> b<?pi x?>c</time></m>",
    b"<m><time>x<b>y<time>nested</time></b>z</time></m>",
    b"<m><time><![CDATA[<t>&]]> &amp; &#233;</time></m>",
    b'<m xmlns:p="urn:p"><p:time>namespaced</p:time><time>plain</time></m>',
    b'<m xmlns="urn:d"><time>in a default namespace: not //time</time></m>',
    b'<m><n xmlns="urn:d"><time>namespaced</time></n><time>plain</time></m>',
    b"<m><!--<time>a comment</time>--><time>t</time></m>",
    b"<m>" + b"<i><j/><k>v</k></i>" * 400 + b"<time>after 1,200 elements</time></m>",
]


@pytest.mark.parametrize("document", CLOCK_DOCUMENTS)
@pytest.mark.parametrize("turned_off", [False, True])
@pytest.mark.parametrize("path", ["//time", "//time/@at"])
def test_a_clock_of_one_name_is_read_off_the_tree_as_its_witness_plan_reads_it(
    document: bytes, turned_off: bool, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``//time`` takes no plan (no path in the NFA, no group in the index): the router reads the
    first ``time`` element off the parsed tree, and its row (node id, string value, size) is the
    row the block's witness plan reads, with the kernel and without. ``//time/@at`` reads the
    attribute of the first ``time`` that has one (``//time[@at]``: a plan, as any binding with a
    condition), which the first ``time`` need not be."""
    document = document.replace(b"<time>", b'<time at="x">', 1)  # the first time has an attribute
    fast, clock = clock_router(path=path)
    if path == "//time":
        assert clock in fast._clocks and clock not in fast._witnesses and not fast._plans
    else:
        assert clock in fast._witnesses and clock not in fast._walked
    assert clock in fast.witness_blocks
    as_plans(monkeypatch)
    planned, _ = clock_router(path=path)
    assert clock in planned._witnesses
    with kernel.turned_off() if turned_off else contextlib.nullcontext():
        expected = planned.route_outcome(document)
        found = fast.route_outcome(document)
    assert found.witnesses == expected.witnesses and found.failures == expected.failures


@pytest.mark.parametrize("limit", [10, 16 + 5, 16 + 4])
def test_a_clock_read_off_the_tree_is_refused_past_the_limit_as_its_plan_is(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock's row counts against the document's result budget as a plan's does: past the
    per-subscription limit the block is refused (FR310) and the message gets no time."""
    document = b"<m><time>12345</time></m>"
    limits = ResultLimits(per_subscription=limit, per_document=10**6)
    fast, clock = clock_router(limits=limits)
    as_plans(monkeypatch)
    planned, _ = clock_router(limits=limits)
    found, expected = fast.route_outcome(document), planned.route_outcome(document)
    assert found.witnesses == expected.witnesses
    assert {k: e.code for k, e in found.failures.items()} == {k: e.code for k, e in expected.failures.items()}
    assert (clock in found.failures) == (limit < 16 + 5)


def test_a_clock_read_off_the_tree_survives_pickling_removal_and_the_fallback_router() -> None:
    """The clock is plain data in the router's artifact; removing it stops it, adding it again
    starts it; the router for documents invalid against the feed's DTD reads it too."""
    dtd = "<!ELEMENT m (time)><!ELEMENT time (#PCDATA)>"
    router, clock = clock_router(dtd=dtd)
    router = pickle.loads(pickle.dumps(router))
    valid, invalid = b"<m><time>v</time></m>", b"<m><time>i</time><extra/></m>"
    assert router.route_outcome(valid).witnesses[clock] == [WitnessRow(1, (("v",),), ())]
    assert router.route_outcome(invalid).witnesses[clock] == [WitnessRow(1, (("i",),), ())]
    assert router._fallback is not None and clock in router._fallback.witness_blocks
    router.remove(clock)
    assert clock not in router.witness_blocks and not router.route_outcome(invalid).witnesses
    router.add_witness(clock_block("f", "//time"))
    assert router.route_outcome(invalid).witnesses[clock] == [WitnessRow(1, (("i",),), ())]


# -- blocks of the form //name, found by a walk of the tree -----------------------------------------

#: a block binding every ``item`` (both sides alike: one block) with plain leaves of child elements
#: and an own attribute, and fragments of copies and of values in an attribute
WALKED_JOIN = (
    "for $a in fr:stream()//item, $b in fr:stream()//item "
    "where $a/title = $b/author and $a/@lang = $b/@lang and $a/category = $b/category "
    'and fr:within($a, $b, "PT1H") '
    'return <r t="{$b/category}">{ $a/title }{ $a/link }{ $b/author }</r>'
)
#: documents over which a walked block reads what its witness plan reads: plain items, items whose
#: children are not plain (the kernel declines), nested items, namesakes in a namespace, comments,
#: CDATA, references, the root itself, none at all, and many
WALKED_DOCUMENTS = [
    b"<rss><channel><item lang='en'><title>T</title><author>A</author><category>c</category>"
    b"<link>http://x/1</link></item><item><title>U</title><category>d</category><category>e</category>"
    b"</item></channel></rss>",
    b"<item lang='de'><title>root</title><item><title>inner</title></item></item>",
    b"<m><item><title lang='x'>not plain</title><author>a<b>b</b>c</author><link/></item></m>",
    b"<m><item><title>a<!--c--> b</title><category><![CDATA[<t>&]]> &amp; &#233;</category></item></m>",
    # an empty CDATA section leaves an empty text node: copied <link></link>, not <link/>
    b"<m><item><title><![CDATA[]]></title><link><![CDATA[]]></link><author/></item></m>",
    b'<m xmlns:p="urn:p"><p:item><title>namespaced</title></p:item><item><title>plain</title></item></m>',
    b'<m xmlns="urn:d"><item><title>in a default namespace: not //item</title></item></m>',
    b'<m><n xmlns="urn:d"><item><title>namespaced</title></item></n><item><title>t</title></item></m>',
    b'<m xmlns:p="urn:p"><item><title>a namespace in scope</title><p:title>x</p:title></item></m>',
    b"<m><!--<item><title>a comment</title></item>--><x/></m>",
    b"<m>" + b"<i><j/><k>v</k></i>" * 300 + b"<item><title>after 900 elements</title></item></m>",
    b"<m>" + b"<item lang='en'><title>t%d</title><category>c</category></item>" * 50 + b"</m>",
]


def walked_router(
    *queries: str, limits: ResultLimits | None = None, dtd: str | None = None
) -> tuple[Router, list[str]]:
    joins = join_set(*queries)
    router = Router.compile([], on_error="collect", result_limits=limits, dtd=dtd)
    for spec in joins.specs.values():
        router.add_witness(spec)
    router.reindex()
    return router, list(joins.specs)


@pytest.mark.parametrize("document", WALKED_DOCUMENTS)
@pytest.mark.parametrize("turned_off", [False, True])
def test_a_block_of_every_element_of_a_name_is_read_off_the_tree_as_its_witness_plan_reads_it(
    document: bytes, turned_off: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``//item`` with rows the kernel reads takes no plan: the router finds every ``item`` by a
    walk of the parsed tree, and its rows (node ids, values, fragments) are the rows the block's
    witness plan reads, with the kernel and without."""
    fast, (block,) = walked_router(WALKED_JOIN)
    assert block in fast.witness_blocks and block in fast._walked and not fast._plans
    as_plans(monkeypatch)
    planned, _ = walked_router(WALKED_JOIN)
    assert block in planned._witnesses
    with kernel.turned_off() if turned_off else contextlib.nullcontext():
        expected = planned.route_outcome(document)
        found = fast.route_outcome(document)
    assert found.witnesses == expected.witnesses and found.failures == expected.failures
    # every document but those whose only items are in a namespace or a comment binds some
    assert (block in found.witnesses) == (not document.startswith((b'<m xmlns="urn:d">', b"<m><!--")))


@settings(max_examples=100, deadline=None)
@given(trees())
def test_walked_rows_are_the_witness_plans_on_generated_trees(document: str) -> None:
    """The same over generated trees (the tree reader's: plain and not plain children, text,
    attributes, namespaces), every ``a`` element bound, with the kernel and without."""
    text = f'<root xmlns:p="urn:p">{document}</root>'.encode()
    query = (
        "for $x in fr:stream()//a, $y in fr:stream()//a "
        'where $x/b = $y/b and $x/@id = $y/@id and fr:within($x, $y, "PT1H") '
        'return <r v="{$y/b}">{ $x/b }{ $x/a }</r>'
    )
    fast, (block,) = walked_router(query)
    with pytest.MonkeyPatch.context() as patch:
        as_plans(patch)
        planned, _ = walked_router(query)
    assert block in fast._walked and block in planned._witnesses
    for off in (False, True):
        with kernel.turned_off() if off else contextlib.nullcontext():
            expected, found = planned.route_outcome(text), fast.route_outcome(text)
        assert found.witnesses == expected.witnesses and found.failures == expected.failures


@pytest.mark.parametrize(
    "query",
    [
        # a fragment two steps down: the general path reads it, from the NFA's streams
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/title = $b/title "
        'and fr:within($a, $b, "PT1H") return <r>{ $a/enclosure/url }</r>',
        # a copy of an attribute
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/title = $b/title "
        'and fr:within($a, $b, "PT1H") return <r>{ $a/@lang }</r>',
        # text nodes, not elements
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/title = $b/title "
        'and fr:within($a, $b, "PT1H") return <r>{ $a/title/text() }</r>',
        # a binding of two steps
        "for $a in fr:stream()//channel/item, $b in fr:stream()//item where $a/title = $b/title "
        'and fr:within($a, $b, "PT1H") return <r/>',
    ],
)
def test_blocks_whose_rows_need_the_shared_automaton_stay_witness_plans(query: str) -> None:
    router, blocks = walked_router(query)
    assert blocks[0] in router._witnesses and blocks[0] not in router._walked  # $a's block


def row_bytes(row: WitnessRow) -> int:
    """What a row counts against the result budget (RowReader.rows: 16 for its bookkeeping)."""
    return 16 + sum(len(value) for values in row.values for value in values) + sum(map(len, row.fragments))


@pytest.mark.parametrize("margin", [-100, -1, 0, 1])
def test_a_walked_block_is_refused_past_the_limit_as_its_plan_is(
    margin: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its rows count against the document's result budget as a plan's do: past the
    per-subscription limit the block is refused (FR310)."""
    document = WALKED_DOCUMENTS[0]
    roomy, (block,) = walked_router(WALKED_JOIN)
    whole = sum(map(row_bytes, roomy.route_outcome(document).witnesses[block]))
    limits = ResultLimits(per_subscription=whole + margin, per_document=10**6)
    fast, _ = walked_router(WALKED_JOIN, limits=limits)
    as_plans(monkeypatch)
    planned, _ = walked_router(WALKED_JOIN, limits=limits)
    found, expected = fast.route_outcome(document), planned.route_outcome(document)
    assert found.witnesses == expected.witnesses
    assert {k: e.code for k, e in found.failures.items()} == {k: e.code for k, e in expected.failures.items()}
    assert (block in found.failures) == (margin < 0)


def test_a_walked_block_charges_the_document_work_budget_as_its_plan_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading its rows charges each node's children to the document's work budget, as the
    plan's rows do: a document of many wide items is refused by both, with the same error."""
    document = b"<m>" + b"<item>" + b"<title>t</title>" * 400 + b"</item>" * 1 + b"</m>"
    fast, _ = walked_router(WALKED_JOIN)
    as_plans(monkeypatch)
    planned, _ = walked_router(WALKED_JOIN)
    for router in (fast, planned):
        router._parser.limits = replace(router._parser.limits, max_work=300)
    errors = []
    for router in (planned, fast):
        with pytest.raises(DocumentError) as caught:
            router.route_outcome(document)
        errors.append((caught.value.code, str(caught.value)))
    assert errors[0] == errors[1]


def test_a_walked_block_survives_pickling_removal_and_the_fallback_router() -> None:
    """The block is plain data in the router's artifact (its reader rebuilt where it is
    unpickled); removing it stops it, adding it again starts it; the router for documents invalid
    against the feed's DTD reads it too."""
    dtd = "<!ELEMENT m (item*)><!ELEMENT item (title)><!ELEMENT title (#PCDATA)>"
    joins = join_set(WALKED_JOIN)
    (spec,) = joins.specs.values()
    router, (block,) = walked_router(WALKED_JOIN, dtd=dtd)
    router = pickle.loads(pickle.dumps(router))
    valid, invalid = b"<m><item><title>v</title></item></m>", b"<m><item><title>i</title><x/></item></m>"
    (row,) = router.route_outcome(valid).witnesses[block]
    assert row.values[list(spec.leaves).index("title")] == ("v",)
    assert block in router.route_outcome(invalid).witnesses
    assert router._fallback is not None and block in router._fallback.witness_blocks
    router.remove(block)
    assert block not in router.witness_blocks and not router.route_outcome(invalid).witnesses
    router.add_witness(spec)
    assert block in router.route_outcome(invalid).witnesses and block in router._walked


def test_a_walked_block_that_fails_costs_only_its_own_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in reading one block's rows is that block's failure for the document (FR, logged),
    not the other subscriptions': the document's results are delivered."""
    joins = join_set(WALKED_JOIN)
    router = Router.compile([("o", "//item/title")], on_error="collect")
    for spec in joins.specs.values():
        router.add_witness(spec)
    (block,) = joins.specs

    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(witness.Walked, "rows", broken)
    found = router.route_outcome(WALKED_DOCUMENTS[0])
    assert found.results["o"] and block in found.failures and block not in found.witnesses


def test_a_clock_that_fails_costs_only_its_own_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a clock: its failure for the document, the document's results delivered."""
    router = Router.compile([("o", "//time")], on_error="collect")
    clock = clock_block("f", "//time")
    router.add_witness(clock)

    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("feedrouter.router.first_named_row", broken)
    found = router.route_outcome(b"<m><time>t</time></m>")
    assert found.results["o"] and clock.id in found.failures and clock.id not in found.witnesses


#: a join whose ``$a`` block's witness plan is an ordinary subscription's plan too (one group)
SHARED_JOIN = (
    "for $a in fr:stream()//item, $b in fr:stream()//item where $a/x and $a/title = $b/title "
    'and fr:within($a, $b, "PT1H") return <r/>'
)
SHARED_ORDINARY = "for $w in //item where $w/x return $w/title"
SHARED_DOCUMENT = b"<m><item><x/><title>" + b"t" * 40 + b"</title></item></m>"


def shared_router(limits: ResultLimits | None = None) -> tuple[Router, str]:
    """A router of ``o`` and the block of :data:`SHARED_JOIN` that shares o's plan group (its
    ``$b`` block, every item, is read off the tree: left out, so the block and ``o`` are all the
    document's limit is shared by)."""
    (spec,) = [spec for spec in join_set(SHARED_JOIN).specs.values() if spec.where]
    router = Router.compile([("o", SHARED_ORDINARY)], on_error="collect", result_limits=limits)
    router.add_witness(spec)
    router.reindex()
    (group,) = [group for group in router._shared.groups() if "o" in group.members]
    assert group.witnesses == (spec.id,)
    return router, spec.id


def test_a_subscription_sharing_a_blocks_plan_gets_its_result_and_the_block_only_its_rows() -> None:
    router, block = shared_router()
    found = router.route_outcome(SHARED_DOCUMENT)
    assert found.results == {"o": b"<title>" + b"t" * 40 + b"</title>"}
    assert [row.node for row in found.witnesses[block]] == [1] and not found.failures


def test_a_subscription_sharing_a_blocks_plan_is_built_within_what_the_rows_left() -> None:
    """The block's rows take their share of the document's limit first; the subscription's
    result is then held to what is left (FR311 past it), as where the block is read off the tree,
    and the document's results and rows together never pass the limit."""
    limits = ResultLimits(per_subscription=100, per_document=100)
    router, block = shared_router(limits)
    found = router.route_outcome(SHARED_DOCUMENT)
    rows = sum(map(row_bytes, found.witnesses[block]))
    assert 0 < rows <= 100 and rows + len(b"<title>" + b"t" * 40 + b"</title>") > 100
    assert {sid: e.code for sid, e in found.failures.items()} == {"o": "FR311"} and not found.results
    roomy = ResultLimits(per_subscription=100, per_document=rows + 55)
    found = shared_router(roomy)[0].route_outcome(SHARED_DOCUMENT)
    assert set(found.results) == {"o"} and block in found.witnesses and not found.failures


def test_a_block_that_fails_in_a_shared_group_costs_only_its_own_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug reading the block's rows fails the block alone: the subscription that shares its
    plan still gets its result."""
    router, block = shared_router()

    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(witness.RowReader, "rows", broken)
    found = router.route_outcome(SHARED_DOCUMENT)
    assert set(found.results) == {"o"} and set(found.failures) == {block} and not found.witnesses
    assert found.failures[block].code == "FR312"
