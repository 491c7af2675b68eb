"""The Guardian's RSS of 31 January 2018 (../shared/data/feeds/rss-parser/guardian.rss) as two feeds of
one-story messages, and join subscriptions written for it: the real documents the join tests run
(tests/differential/test_join_shared_data.py against Saxon, the Spark engines against the
in-process stage in tests/integration/test_join_pipeline.py).

Real stories bring what generated items do not: several ``category`` elements an item (a value join
on them is existential, one shared category is enough), ``dc:`` and ``media:`` namespaces, escaped
HTML in descriptions, bylines shared by several stories, and times spread unevenly over the day.
Each story arrives in the hour of its own ``pubDate``; the stories are split into two feeds by the
section of their first category, so that cross-feed joins meet real data too.
"""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

from lxml import etree

from tests.differential.join_pipeline import Feeds

PROLOG = (
    'import module namespace fr = "urn:feedrouter:stream:1";\n'
    'declare namespace dc = "http://purl.org/dc/elements/1.1/";\n'
    'declare namespace media = "http://search.yahoo.com/mrss/";\n'
)
#: the wrapper of one story: the feed's own root and namespaces, without its channel's other elements
WRAPPER = (
    '<rss xmlns:media="http://search.yahoo.com/mrss/" xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'version="2.0"><channel>{item}</channel></rss>'
)

GUARDIAN_JOINS = {
    # two stories sharing a category (any of their several) within two hours
    "same-topic": (
        "us",
        PROLOG + "for $a in fr:stream()//item, $b in fr:stream()//item "
        "where $a/category = $b/category and fr:within($a, $b, 'PT2H') "
        "return <pair>{ $a/title }{ $b/title }</pair>",
    ),
    # a byline's next story in the other section within six hours
    "byline-follows": (
        "us",
        PROLOG + "for $a in fr:stream()//item, $b in fr:stream('world')//item "
        "where $b/dc:creator = $a/dc:creator and fr:followed-by($a, $b, 'PT6H') "
        "return <by who='{ $a/dc:creator }'>{ $a/link }{ $b/link }</by>",
    ),
    # a category's page (the attribute) shared across sections, US politics first
    "section-page": (
        "world",
        PROLOG + "for $w in fr:stream()//item, $u in fr:stream('us')//item[category = 'US politics'] "
        "where $w/category/@domain = $u/category/@domain and fr:within($w, $u, 'PT3H') "
        "return ($w/guid, $u/guid)",
    ),
    # local conditions on both sides, a string test and an existence test
    "trump-then-picture": (
        "world",
        PROLOG + "for $x in fr:stream('us')//item[contains(title, 'Trump')], $y in fr:stream()//item "
        "where $y/category = $x/category and $y/media:content and fr:followed-by($x, $y, 'PT5H') "
        "return <p>{ $x/title }{ $y/media:content }</p>",
    ),
    # two value joins: the same byline and a shared category
    "byline-and-topic": (
        "world",
        PROLOG + "for $a in fr:stream()//item, $b in fr:stream()//item "
        "where $a/dc:creator = $b/dc:creator and $a/category = $b/category "
        "and fr:within($a, $b, 'PT6H') return <same>{ $a/guid }{ $b/guid }</same>",
    ),
}


def guardian_stories(shared_data: Path) -> Feeds:
    """Each story of the Guardian's feed as its own message, in the hour of its ``pubDate``, in the
    feed ``us`` when its first category is a US-news page and ``world`` otherwise (in the feed's
    order within an hour)."""
    root = etree.parse(str(shared_data / "feeds" / "rss-parser" / "guardian.rss")).getroot()
    feeds: dict[str, dict[datetime, list[tuple[str, bytes]]]] = {"us": {}, "world": {}}
    for number, item in enumerate(root.iter("item")):
        time = parsedate_to_datetime(item.findtext("pubDate") or "").astimezone(timezone.utc)
        hour = time.replace(minute=0, second=0, microsecond=0)
        first = item.find("category")
        feed = "us" if first is not None and "/us-news/" in first.get("domain", "") else "world"
        story = WRAPPER.format(item=etree.tostring(item, encoding="unicode", with_tail=False))
        data = etree.tostring(etree.fromstring(story.encode()), encoding="utf-8", xml_declaration=True)
        feeds[feed].setdefault(hour, []).append((f"guardian/{number:03d}.xml", data))
    return feeds


def guardian_feeds(shared_data: Path) -> tuple[Feeds, list[datetime]]:
    """:func:`guardian_stories` with every hour of the day's stories in both feeds (an hour a feed
    has no story of is an empty batch), and those hours in order."""
    stories = guardian_stories(shared_data)
    hours = sorted({hour for by_hour in stories.values() for hour in by_hour})
    feeds: Feeds = {feed: {hour: found.get(hour, []) for hour in hours} for feed, found in stories.items()}
    return feeds, hours
