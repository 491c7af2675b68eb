"""Wide elements: one element with tens of thousands of children or attributes routes in linear time.

A megabyte document can hold one element with 30,000 inline children (``<p>t<b>x</b>t...</p>``) or
50,000 attributes; reading each of its text nodes or attributes by a look-up from the first made
those documents cost tens of seconds. These tests route such documents and check the results byte
for byte; they have no timing assertion, but a quadratic regression makes them take that long.
"""

from __future__ import annotations

from feedrouter import Router

CHILDREN = 30_000
ATTRIBUTES = 50_000


def inline_paragraph(count: int) -> bytes:
    """``<r><p>t<b>x</b>0<b>x</b>1...</p></r>``: text nodes between ``count`` element children."""
    return b"<r><p>t" + b"".join(b"<b>x</b>%d" % i for i in range(count)) + b"</p></r>"


def paragraph_text(count: int) -> bytes:
    return b"t" + b"".join(b"%d" % i for i in range(count))


def test_the_text_nodes_of_an_element_with_many_children_are_returned() -> None:
    router = Router.compile([("texts", "//p/text()"), ("copies", "for $p in //p return <x>{$p/text()}</x>")])
    text = paragraph_text(CHILDREN)
    assert router.route(inline_paragraph(CHILDREN)) == {"texts": text, "copies": b"<x>" + text + b"</x>"}


def attribute_list(count: int) -> str:
    return " ".join(f'k{i}="v{i}"' for i in range(count))


def many_attributes(count: int) -> bytes:
    """``<r xmlns:p="urn:p"><a k0="v0" ... p:z="w" xml:lang="en"/></r>``."""
    return f'<r xmlns:p="urn:p"><a {attribute_list(count)} p:z="w" xml:lang="en"/></r>'.encode()


def test_attribute_tests_on_an_element_with_many_attributes_see_every_one() -> None:
    router = Router.compile([("last", "//a[@* = 'w']"), ("none", "//a[@* = 'absent']")])
    expected = f'<a xmlns:p="urn:p" {attribute_list(ATTRIBUTES)} p:z="w" xml:lang="en"/>'.encode()
    assert router.route(many_attributes(ATTRIBUTES)) == {"last": expected}


def test_every_attribute_of_an_element_with_many_attributes_is_copied() -> None:
    router = Router.compile([("copy", "for $a in //a return <x>{$a/@*}</x>")])
    expected = f'<x {attribute_list(ATTRIBUTES)} xmlns:p="urn:p" p:z="w" xml:lang="en"></x>'.encode()
    assert router.route(many_attributes(ATTRIBUTES)) == {"copy": expected}


def test_the_namespaced_attributes_of_an_element_with_many_namespaces_are_copied() -> None:
    """``{ $a/@* }`` on an element with thousands of namespaces and an attribute in each: each copy
    keeps its document prefix (the least one bound to its namespace) and brings its declaration
    once; the namespaces in scope are read once per element, not once per attribute."""
    count = 4_000
    declared = " ".join(f'xmlns:q{i}="urn:{i}" xmlns:p{i}="urn:{i}" p{i}:k="v{i}"' for i in range(count))
    router = Router.compile([("copies", "for $a in //a return <x>{ $a/@* }</x>")])
    copied = " ".join(f'xmlns:p{i}="urn:{i}" p{i}:k="v{i}"' for i in range(count))
    assert router.route(f"<r><a {declared}/></r>".encode()) == {"copies": f"<x {copied}></x>".encode()}
