"""Routers with DTD-driven optimizations check each document against the feed DTD (issue 18, item
12): an invalid one is routed by a DTD-free router built on first need, or refused (FR207); routers
take bytes, bytearray and memoryview documents (item 13)."""

from __future__ import annotations

import pickle

import pytest

from feedrouter import DocumentError, Router
from feedrouter.workload import dtds

VALID = (
    b'<bib><book year="1994"><title>TCP/IP</title><author><last>S</last><first>W</first></author>'
    b"<publisher>AW</publisher><price>65.95</price></book></bib>"
)
INVALID = VALID.replace(b"</bib>", b"<article><title>Art</title></article></bib>")
SUBSCRIPTIONS = [("titles", "//title"), ("lasts", "//last")]


def bib_router(**options: object) -> Router:
    return Router.compile(SUBSCRIPTIONS, dtd=dtds.load("bib"), **options)  # type: ignore[arg-type]


def test_only_routers_using_the_dtd_validate_documents() -> None:
    assert bib_router().validates_documents
    assert not bib_router(optimize="query").validates_documents
    assert not Router.compile(SUBSCRIPTIONS).validates_documents
    # without validation the rewritten plan answers for the valid documents it assumes
    assert bib_router(optimize="query").route(INVALID)["titles"] == b"<title>TCP/IP</title><title>Art</title>"


def test_the_fallback_is_built_once_for_the_first_invalid_document_and_reused() -> None:
    router = bib_router()
    assert router.route(VALID)["titles"] == b"<title>TCP/IP</title>" and router._fallback is None
    assert router.route(INVALID)["titles"] == b"<title>TCP/IP</title><title>Art</title>"
    fallback = router._fallback
    assert fallback is not None and not fallback.validates_documents
    router.route(INVALID)
    assert router._fallback is fallback


def test_the_fallback_follows_adds_and_removes() -> None:
    router = bib_router()
    router.route(INVALID)
    router.add("firsts", "//first")
    router.remove("lasts")
    assert set(router.route(INVALID)) == {"titles", "firsts"}
    assert set(router._fallback.subscription_ids) == {"titles", "firsts"}  # type: ignore[union-attr]


def test_pickled_routers_leave_the_validator_and_fallback_behind_and_still_validate() -> None:
    router = bib_router(invalid_documents="quarantine")
    with pytest.raises(DocumentError):
        router.route(INVALID)
    assert router._validator is not None
    copy = pickle.loads(pickle.dumps(router))
    assert copy._validator is None and copy._fallback is None
    with pytest.raises(DocumentError) as caught:
        copy.route(INVALID)
    assert caught.value.code == "FR207" and "article" in caught.value.message

    fallback = bib_router()
    fallback.route(INVALID)
    assert len(pickle.dumps(fallback)) == len(pickle.dumps(bib_router()))


def test_fr207_names_the_first_problem_and_its_line() -> None:
    document = b"<!-- the document element starts on line 2 -->\n" + INVALID
    with pytest.raises(DocumentError) as caught:
        bib_router(invalid_documents="quarantine").route(document, source="x.xml")
    assert caught.value.code == "FR207" and caught.value.line == 2
    assert "Element bib content does not follow the DTD" in caught.value.message
    assert "invalid_documents='quarantine'" in caught.value.message


@pytest.mark.parametrize(
    "wrap", [bytes, bytearray, memoryview, lambda d: memoryview(b"xx" + d + b"yy")[2:-2]]
)
def test_documents_may_be_bytes_bytearray_or_memoryview(wrap) -> None:  # type: ignore[no-untyped-def]
    router = Router.compile([("titles", "//title")])
    document = b'<!DOCTYPE bib [<!ATTLIST title lang CDATA "en">]>' + VALID
    assert router.route(wrap(document)) == {"titles": b'<title lang="en">TCP/IP</title>'}
    assert bib_router().route(wrap(INVALID))["titles"] == b"<title>TCP/IP</title><title>Art</title>"
