"""The join oracle runs subscriptions verbatim over the stream module (feedrouter/join/stream.xq)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest
from saxonche import PySaxonApiError

from feedrouter.join.clock import parse_event_time, parse_window
from tests.differential.join_oracle import Message, SaxonJoinOracle

IMPORT = 'import module namespace fr = "urn:feedrouter:stream:1";\n'
# saxonche's message of an error raised while run_query_to_value evaluates is sometimes only the
# description, without the code (fr:bad-window): match the description.
BAD_WINDOW = "is not a positive xs:dayTimeDuration"

PROMO = IMPORT + """for $book in fr:stream()//book[@lang = "en"],
    $blog in fr:stream("blogs")//item
where $blog/author = $book/author and $blog/title = $book/title
  and fr:followed-by($book, $blog, "PT6H")
return <promo>{ $book/title }{ $blog/link }</promo>"""

# Pairs of the root elements' @id over the one feed "s", for the time predicates on their own.
PAIRS = IMPORT + """for $x in fr:stream()//e, $y in fr:stream()//e
where fr:{predicate}($x, $y, "{window}")
return <p>{{ string($x/@id) }}-{{ string($y/@id) }}</p>"""


@pytest.fixture(scope="module")
def oracle() -> Iterator[SaxonJoinOracle]:
    with SaxonJoinOracle() as shared:
        yield shared


def iso(text: str) -> datetime | None:
    return parse_event_time(text, "iso8601")


def book(author: str, title: str, lang: str = "en") -> str:
    return f'<book lang="{lang}"><author>{author}</author><title>{title}</title></book>'


def item(author: str, title: str, link: str) -> str:
    return f"<item><author>{author}</author><title>{title}</title><link>{link}</link></item>"


def message(body: str, time: datetime | None) -> Message:
    return (f"<doc>{body}</doc>".encode(), time)


def elements(*times: tuple[str, datetime | None]) -> list[Message]:
    """One message per time, holding an ``e`` for each id in the comma-separated first field."""
    return [message("".join(f'<e id="{i}"/>' for i in ids.split(",")), time) for ids, time in times]


BOOKS = [
    message(book("Ann", "XML"), iso("2024-05-01T08:00:00Z")),
    message(book("Bob", "SQL") + book("Ann", "XML", lang="de"), iso("2024-05-01T09:00:00Z")),
    message(book("Cat", "Go"), None),
]
BLOGS = [
    message(item("Ann", "XML", "before"), iso("2024-05-01T07:00:00Z")),
    message(item("Ann", "XML", "same-time"), iso("2024-05-01T08:00:00Z")),
    message(item("Ann", "XML", "ann-2h") + item("Bob", "SQL", "bob-1h"), iso("2024-05-01T10:00:00Z")),
    # 12:00 at +02:00, so 10:00 in UTC: the stream's order, not the times', orders the results
    message(item("Bob", "SQL", "bob-1h-again"), parse_event_time("Wed, 1 May 2024 12:00 +0200", "rfc822")),
    message(item("Ann", "XML", "ann-6h") + item("Bob", "SQL", "bob-5h"), iso("2024-05-01T14:00:00Z")),
    message(item("Ann", "XML", "ann-6h-1s"), iso("2024-05-01T14:00:01Z")),
    message(item("Cat", "Go", "cat"), iso("2024-05-01T15:00:00Z")),
]


def promo(title: str, link: str) -> bytes:
    return f"<promo><title>{title}</title><link>{link}</link></promo>".encode()


def test_the_example_subscription_gives_the_pairs_in_order(oracle: SaxonJoinOracle) -> None:
    result = oracle.run({"books": BOOKS, "blogs": BLOGS}, "books", PROMO)
    assert result == [
        promo("XML", "ann-2h"),
        promo("XML", "ann-6h"),
        promo("SQL", "bob-1h"),
        promo("SQL", "bob-1h-again"),
        promo("SQL", "bob-5h"),
    ]


def test_the_own_feed_is_the_one_named(oracle: SaxonJoinOracle) -> None:
    feeds = {"blogs": BLOGS, "books": BOOKS}  # the order of the feeds does not matter
    assert oracle.run(feeds, "books", PROMO)[0] == promo("XML", "ann-2h")
    assert oracle.run(feeds, "blogs", IMPORT + "count(fr:stream())") == [b"7"]


def test_followed_by_is_strictly_later_and_within_the_window(oracle: SaxonJoinOracle) -> None:
    feed = elements(
        ("a", iso("2024-05-01T00:00:00Z")),
        ("b", iso("2024-05-01T00:00:00Z")),
        ("c", iso("2024-05-01T01:00:00Z")),
        ("d", iso("2024-05-01T01:00:00.000001Z")),
        ("n", None),
    )
    result = oracle.run({"s": feed}, "s", PAIRS.format(predicate="followed-by", window="PT1H"))
    assert result == [b"<p>a-c</p>", b"<p>b-c</p>", b"<p>c-d</p>"]


def test_within_takes_both_orders_across_documents(oracle: SaxonJoinOracle) -> None:
    feed = elements(
        ("a,b", iso("2024-05-01T00:00:00Z")),
        ("c", iso("2024-05-01T00:30:00Z")),
        ("d", iso("2024-05-01T02:00:00Z")),
        ("n", None),
    )
    result = oracle.run({"s": feed}, "s", PAIRS.format(predicate="within", window="PT1H"))
    assert result == [b"<p>a-c</p>", b"<p>b-c</p>", b"<p>c-a</p>", b"<p>c-b</p>"]


def test_within_takes_equal_times_of_different_documents(oracle: SaxonJoinOracle) -> None:
    feed = elements(("a", iso("2024-05-01T00:00:00Z")), ("b", iso("2024-05-01T00:00:00Z")))
    result = oracle.run({"s": feed}, "s", PAIRS.format(predicate="within", window="PT1S"))
    assert result == [b"<p>a-b</p>", b"<p>b-a</p>"]


def test_a_message_without_time_is_in_the_stream_but_in_no_join(oracle: SaxonJoinOracle) -> None:
    feed = elements(("a", iso("2024-05-01T00:00:00Z")), ("n", None), ("b", iso("2024-05-01T00:00:01Z")))
    query = IMPORT + "fr:stream()//e/string(@id), count(fr:stream()), fr:stream() ! string(fr:time(.))"
    assert oracle.run({"s": feed}, "s", query) == [
        b"a", b"n", b"b", b"3", b"2024-05-01T00:00:00Z", b"", b"2024-05-01T00:00:01Z"
    ]
    for predicate in ("followed-by", "within"):
        result = oracle.run({"s": feed}, "s", PAIRS.format(predicate=predicate, window="P1D"))
        assert all(b"n" not in pair for pair in result)
        assert b"<p>a-b</p>" in result


def test_a_node_of_no_message_has_no_time(oracle: SaxonJoinOracle) -> None:
    feed = elements(("a", iso("2024-05-01T00:00:00Z")))
    query = IMPORT + 'empty(fr:time(<e/>)), fr:within(<e/>, fr:stream(), "P1D")'
    assert oracle.run({"s": feed}, "s", query) == [b"true", b"false"]


@pytest.mark.parametrize("window", ["PT0S", "-PT1H", "6h", "P1M", "PT", ""])
@pytest.mark.parametrize("predicate", ["followed-by", "within"])
def test_a_bad_window_raises(oracle: SaxonJoinOracle, predicate: str, window: str) -> None:
    feed = elements(("a", iso("2024-05-01T00:00:00Z")), ("b", iso("2024-05-01T00:00:01Z")))
    with pytest.raises(PySaxonApiError, match=BAD_WINDOW):
        oracle.run({"s": feed}, "s", PAIRS.format(predicate=predicate, window=window))


def test_a_bad_window_raises_even_without_times(oracle: SaxonJoinOracle) -> None:
    feed = elements(("a", None), ("b", None))
    with pytest.raises(PySaxonApiError, match=BAD_WINDOW):
        oracle.run({"s": feed}, "s", PAIRS.format(predicate="followed-by", window="PT0S"))


def test_an_unknown_feed_raises(oracle: SaxonJoinOracle) -> None:
    with pytest.raises(PySaxonApiError, match="no feed named 't'"):
        oracle.run({"s": []}, "s", IMPORT + 'fr:stream("t")')


@pytest.mark.parametrize(
    "window", ["PT6H", "P1DT12H30M15S", "PT0.5S", " PT1M ", "PT0S", "-PT1H", "P1M", "PT.5S", "PT1.S", "P1DT"]
)
def test_parse_window_accepts_what_the_module_accepts(oracle: SaxonJoinOracle, window: str) -> None:
    feed = elements(("a", iso("2024-05-01T00:00:00Z")), ("b", iso("2024-05-01T00:00:00.5Z")))
    query = PAIRS.format(predicate="followed-by", window=window)
    try:
        parse_window(window)
    except ValueError:
        with pytest.raises(PySaxonApiError, match=BAD_WINDOW):
            oracle.run({"s": feed}, "s", query)
    else:
        assert oracle.run({"s": feed}, "s", query) == [b"<p>a-b</p>"]
