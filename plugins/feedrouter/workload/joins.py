"""Feeds of RSS-like items and join subscriptions over them (issue 16; paper 001, section 6).

:func:`generate_feed_hours` writes hours of small ``<item>`` documents for several feeds, the input
of join tests and benchmarks; :func:`generate_join_subscriptions` writes join subscriptions in
feedrouter's language (texts Saxon runs as they are) whose value joins compare the items' leaves.

Both draw their values from one :class:`Vocabulary`, small and Zipf-skewed, so that value joins
match often enough to produce pairs: the paper's generator picks ``k`` value joins per query from
``1..K`` with a Zipf distribution and binds their variables to leaves chosen uniformly at random,
and so does this one, over the leaves of :data:`LEAVES`.

Some leaves share values on purpose, so that a join may compare different fields and still match:
every sixth title is a category name (``$b/category = $a/title``), and half of the guids are the
item's link (a permalink, ``$b/guid = $a/link``).

>>> hours = generate_feed_hours(seed=1, feeds=("news",), hours=1, items_per_hour=2)
>>> [message.key for message in hours["news"][0].messages]
['item-000000.xml', 'item-000001.xml']
>>> texts = generate_join_subscriptions(1, seed=1, feeds=("news", "blogs"), own="news")
>>> texts[0].startswith('import module namespace fr = "urn:feedrouter:stream:1";')
True
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from xml.sax.saxutils import escape, quoteattr

from feedrouter.lang.parser import MAX_VALUE_JOINS
from feedrouter.workload.subscriptions import xquery_string

__all__ = [
    "LEAVES",
    "GeneratedMessage",
    "HourBatch",
    "Vocabulary",
    "generate_feed_hours",
    "generate_join_subscriptions",
]

#: The leaves of an item that value joins compare, relative to the bound ``item``.
LEAVES: tuple[str, ...] = ("title", "author", "category", "ticker", "guid", "link", "@lang")
#: the most value joins a generated subscription has: one per leaf, within the language's bound
MOST_JOINS = min(len(LEAVES), MAX_VALUE_JOINS)

#: Leaves whose values overlap, so that a join between them can match (see the module doc).
_OVERLAPS: dict[str, tuple[str, ...]] = {
    "title": ("category",),
    "category": ("title",),
    "guid": ("link",),
    "link": ("guid",),
}

_FIRST = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Tim")
_LAST = ("Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "O'Brien", "Hamilton", "Lee")
_SUBJECTS = ("Markets", "Rates", "AT&T", "Chips", "Oil", "Rail", "Banks", "Retail", "Cloud", "Crops")
_VERBS = ("rally", "slump", "stall", "surge", "recover", "wobble")
_CATEGORIES = ("books", "markets", "tech", "science", "sports", "travel", "music", "health", "food", "games")
_TICKERS = ("ACME", "INTC", "MSFT", "AAPL", "IBM", "ORCL", "SAP", "GOOG", "AMZN", "NVDA")
_LANGS = ("en", "de", "fr", "es")
# Missing (None) or unparsable as RFC 822: a word, a time without its zone, ISO 8601, a bad date, nothing.
_BROKEN_DATES = (
    None,
    "yesterday",
    "Wed, 01 May 2024 08:30:00",
    "2024-05-01T08:30:00Z",
    "Wed, 32 May 2024",
    "",
)
_VARIABLES = (("a", "b"), ("x", "y"), ("book", "blog"), ("story", "post"), ("left", "right"), ("s", "t"))
_ELEMENTS = ("r", "pair", "promo", "match", "alert")
_START = datetime(2024, 5, 1, 8, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Vocabulary:
    """How many distinct values each leaf takes; the smaller, the more often value joins match.

    Attributes:
        authors: Distinct authors (``Ada Lovelace``, ``Alan O'Brien``...).
        titles: Distinct titles; every sixth is a category name (``markets``), the others read
            ``Markets rally``.
        tickers: Distinct tickers (``ACME``...).
        categories: Distinct categories (``books``...); an item has 0 to 2 of them.
        links: Distinct links, one per story: two items with one link tell the same story.
        langs: Distinct ``@lang`` values (at most 4: en, de, fr, es).
        permalinks: The fraction of items whose guid is their link; the others have a unique guid.
        zipf: The exponent of the Zipf distribution of every leaf's values (0: uniform).
    """

    # Tuned so that about half of generate_join_subscriptions' defaults find a pair in 3 hours of 2
    # feeds with 60 items an hour: with a few thousand candidate pairs, smaller vocabularies make
    # nearly every subscription match, and then a test or a benchmark tells little.
    authors: int = 60
    titles: int = 90
    tickers: int = 30
    categories: int = 12
    links: int = 120
    langs: int = 4
    permalinks: float = 0.25
    zipf: float = 0.8  # the paper's Zipfian parameter (section 6.1, table of defaults)

    def author(self, rank: int) -> str:
        """The author of a rank: every (first, last) pair once, then numbered ones."""
        first, turn = divmod(rank, len(_FIRST))
        if first >= len(_LAST):
            return f"Author {rank}"
        return f"{_FIRST[turn]} {_LAST[(first + turn) % len(_LAST)]}"

    def title(self, rank: int) -> str:
        """The title of a rank; every sixth is a category name (the overlap of the two leaves)."""
        if rank % 6 == 3:
            return self.category((rank // 6) % self.categories)
        subject, verb = divmod(rank, len(_VERBS))
        return f"{_SUBJECTS[subject % len(_SUBJECTS)]} {_VERBS[verb]}" + (
            f" {subject // len(_SUBJECTS)}" if subject >= len(_SUBJECTS) else ""
        )

    def category(self, rank: int) -> str:
        """The category of a rank."""
        return _CATEGORIES[rank] if rank < len(_CATEGORIES) else f"topic{rank}"

    def ticker(self, rank: int) -> str:
        """The ticker of a rank."""
        return _TICKERS[rank] if rank < len(_TICKERS) else f"TK{rank}"

    def link(self, rank: int) -> str:
        """The link of a story; some carry a query string, so that ``&`` gets escaped."""
        query = "?src=rss&id=" if rank % 4 == 1 else "/"
        return f"https://example.org/story{query}{rank}"

    def lang(self, rank: int) -> str:
        """The ``@lang`` value of a rank."""
        return _LANGS[rank % len(_LANGS)]


DEFAULT_VOCABULARY = Vocabulary()


@dataclass(frozen=True)
class GeneratedMessage:
    """One message of a feed.

    Attributes:
        key: The object's name under its hour's prefix, ``item-000012.xml``; keys sort in stream order.
        data: The document, UTF-8 without an XML declaration.
        event_time: The time its ``pubDate`` says, aware UTC; ``None`` when that is missing or
            unparsable (such a message takes part in no join).
    """

    key: str
    data: bytes
    event_time: datetime | None


@dataclass(frozen=True)
class HourBatch:
    """The messages that arrived in one hour of one feed, in stream order (by key)."""

    hour: datetime
    messages: list[GeneratedMessage] = field(default_factory=list)


class _Zipf:
    """Draws ranks ``0..size-1`` with probability proportional to ``1 / (rank + 1) ** s``."""

    def __init__(self, size: int, s: float) -> None:
        if size < 1:
            raise ValueError(f"a vocabulary needs at least one value, not {size}")
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) ** s for rank in range(size)))

    def draw(self, rng: random.Random) -> int:
        point = rng.random() * self.cumulative[-1]
        return min(bisect.bisect_right(self.cumulative, point), len(self.cumulative) - 1)


@dataclass(frozen=True)
class _Draws:
    """One Zipf sampler per leaf of a vocabulary."""

    vocabulary: Vocabulary
    authors: _Zipf
    titles: _Zipf
    tickers: _Zipf
    categories: _Zipf
    links: _Zipf
    langs: _Zipf

    @classmethod
    def of(cls, vocabulary: Vocabulary) -> _Draws:
        v, s = vocabulary, vocabulary.zipf
        samplers = (v.authors, v.titles, v.tickers, v.categories, v.links, min(v.langs, len(_LANGS)))
        return cls(vocabulary, *(_Zipf(size, s) for size in samplers))


# -- documents -------------------------------------------------------------------------------------


def generate_feed_hours(
    *,
    seed: int,
    feeds: Sequence[str] = ("news", "blogs"),
    hours: int = 3,
    items_per_hour: int = 60,
    start: datetime = _START,
    vocabulary: Vocabulary = DEFAULT_VOCABULARY,
    lateness: timedelta = timedelta(hours=1),
    broken: float = 0.02,
) -> dict[str, list[HourBatch]]:
    """Generate hours of RSS-like items for several feeds.

    Each message is one ``<item>`` with a ``title``, ``link`` and ``guid``, usually an ``author``,
    0 to 2 ``category``, sometimes a ``ticker`` and a ``@lang``, and a ``pubDate`` in RFC 822
    (``Wed, 01 May 2024 08:30:00 GMT``). A message that arrives in hour ``h`` was published in
    ``[h - lateness, h + 1h)``, so some arrive late; a fraction ``broken`` has no pubDate or one that
    does not parse. Each feed depends only on ``(seed, feed name)``.

    Args:
        seed: The seed; the same seed and arguments give the same documents.
        feeds: The feed names.
        hours: How many consecutive hours, from ``start``.
        items_per_hour: Messages per feed and hour.
        start: The first hour, an aware datetime on the hour.
        vocabulary: The values of the leaves (share it with :func:`generate_join_subscriptions`).
        lateness: How long before its arrival hour a message may have been published (not negative).
        broken: The fraction of messages whose pubDate is missing or unparsable.

    Returns:
        For each feed, its hours in order, each with its messages in stream order.

    Raises:
        ValueError: ``start`` is naive or not on the hour, or ``lateness`` is negative.
    """
    if start.tzinfo is None or (start.minute, start.second, start.microsecond) != (0, 0, 0):
        raise ValueError(f"the first hour must be an aware datetime on the hour, not {start.isoformat()}")
    if lateness < timedelta(0):
        raise ValueError(f"lateness cannot be negative: {lateness}")
    writer = _ItemWriter(_Draws.of(vocabulary), lateness, broken)
    first = start.astimezone(timezone.utc)
    return {
        feed: writer.feed(random.Random(f"{seed}:{feed}"), feed, first, hours, items_per_hour)
        for feed in feeds
    }


@dataclass(frozen=True)
class _ItemWriter:
    draws: _Draws
    lateness: timedelta
    broken: float

    def feed(self, rng: random.Random, feed: str, start: datetime, hours: int, items: int) -> list[HourBatch]:
        batches = []
        for offset in range(hours):
            hour = start + timedelta(hours=offset)
            messages = [self.message(rng, feed, hour, index) for index in range(items)]
            batches.append(HourBatch(hour, messages))
        return batches

    def message(self, rng: random.Random, feed: str, hour: datetime, index: int) -> GeneratedMessage:
        # whole seconds: RFC 822 has no fractions, and the event time must be what the text says
        span = int((self.lateness + timedelta(hours=1)).total_seconds())
        published = hour - self.lateness + timedelta(seconds=rng.randrange(span))
        time: datetime | None = published
        date: str | None = format_datetime(published, usegmt=True)
        if rng.random() < self.broken:
            date, time = rng.choice(_BROKEN_DATES), None
        guid = f"tag:example.org,2024:{feed}/{hour:%Y%m%d%H}/{index}"
        body = self.item(rng, guid, date)
        return GeneratedMessage(f"item-{index:06d}.xml", body.encode("utf-8"), time)

    def item(self, rng: random.Random, guid: str, date: str | None) -> str:
        d, v = self.draws, self.draws.vocabulary
        link = v.link(d.links.draw(rng))
        children = [("title", v.title(d.titles.draw(rng))), ("link", link)]
        if rng.random() < 0.9:
            children.append(("author", v.author(d.authors.draw(rng))))
        categories = {v.category(d.categories.draw(rng)) for _ in range(rng.randrange(3))}
        children += [("category", category) for category in sorted(categories)]
        if rng.random() < 0.6:
            children.append(("ticker", v.ticker(d.tickers.draw(rng))))
        children.append(("guid", link if rng.random() < v.permalinks else guid))
        if date is not None:
            children.append(("pubDate", date))
        lang = f" lang={quoteattr(v.lang(d.langs.draw(rng)))}" if rng.random() < 0.7 else ""
        return f"<item{lang}>" + "".join(f"<{n}>{escape(text)}</{n}>" for n, text in children) + "</item>"


# -- subscriptions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Knobs:
    max_joins: int
    zipf: float
    windows_hours: tuple[int, int]
    cross_feed: float
    within: float
    local_conditions: float
    shared_leaf: float
    cross_field: float
    reversed_temporal: float
    minutes: float
    binding_predicates: float
    sequence_return: float
    attribute_template: float


def generate_join_subscriptions(
    n: int,
    *,
    seed: int,
    feeds: Sequence[str],
    own: str,
    max_joins: int = 4,
    zipf: float = 1.0,
    windows_hours: tuple[int, int] = (1, 6),
    cross_feed: float = 0.1,
    within: float = 0.3,
    local_conditions: float = 0.5,
    shared_leaf: float = 0.15,
    cross_field: float = 0.15,
    reversed_temporal: float = 0.25,
    minutes: float = 0.15,
    binding_predicates: float = 0.2,
    sequence_return: float = 0.15,
    attribute_template: float = 0.2,
    vocabulary: Vocabulary = DEFAULT_VOCABULARY,
) -> list[str]:
    """Generate ``n`` join subscription texts, each of which :func:`feedrouter.lang.parse` reads as a
    :class:`~feedrouter.lang.ast.JoinFlwr` and Saxon runs with the stream module.

    Args:
        n: How many subscriptions.
        seed: The seed; the same seed and arguments give the same texts.
        feeds: The feeds there are; the second binding of a cross-feed join reads one of them.
        own: The subscriptions' own feed (``fr:stream()``).
        max_joins: K, the most value joins of one subscription (1 to :data:`MOST_JOINS`).
        zipf: The Zipf exponent of k in ``1..max_joins`` (0: uniform; the larger, the more k = 1).
        windows_hours: The inclusive range of the window in whole hours (``"PT6H"``).
        cross_feed: The probability that the second binding reads another feed than ``own``.
        within: The probability of ``fr:within``, else ``fr:followed-by``.
        local_conditions: The probability that the where clause has one or two local conditions.
        shared_leaf: The probability (for k >= 2) that two joins compare one left leaf.
        cross_field: The probability that a join compares two different fields with overlapping
            values (``$b/category = $a/title``) instead of one field on both sides.
        reversed_temporal: The probability that the temporal term names the second variable first.
        minutes: The probability that the window is written in minutes (``"PT90M"``).
        binding_predicates: The probability, per binding, of a predicate on ``//item``.
        sequence_return: The probability of a sequence return ``($a/title, $b/link)``.
        attribute_template: The probability that the result element has an attribute value template.
        vocabulary: The values local conditions compare with (the one the documents use).

    Returns:
        The texts, each with its module import.

    Raises:
        ValueError: ``max_joins`` is out of range, ``windows_hours`` is empty or not positive, or
            ``own`` is not in ``feeds``.
    """
    if not 1 <= max_joins <= MOST_JOINS:
        raise ValueError(f"max_joins must be 1 to {MOST_JOINS}, not {max_joins}")
    if not 0 < windows_hours[0] <= windows_hours[1]:
        raise ValueError(f"windows_hours must be a range of positive hours, not {windows_hours}")
    if own not in feeds:
        raise ValueError(f"the own feed {own!r} is not one of the feeds {list(feeds)}")
    knobs = _Knobs(
        max_joins,
        zipf,
        windows_hours,
        cross_feed,
        within,
        local_conditions,
        shared_leaf,
        cross_field,
        reversed_temporal,
        minutes,
        binding_predicates,
        sequence_return,
        attribute_template,
    )
    writer = _JoinWriter(random.Random(seed), knobs, vocabulary, [f for f in feeds if f != own])
    return [writer.subscription() for _ in range(n)]


@dataclass
class _JoinWriter:
    rng: random.Random
    knobs: _Knobs
    vocabulary: Vocabulary
    others: list[str]
    joins: _Zipf = field(init=False)

    def __post_init__(self) -> None:
        self.joins = _Zipf(self.knobs.max_joins, self.knobs.zipf)

    def subscription(self) -> str:
        a, b = (f"${name}" for name in self.rng.choice(_VARIABLES))
        cross = self.others and self.rng.random() < self.knobs.cross_feed
        feed = self.rng.choice(self.others) if cross else ""
        terms = [self.value_join(a, b, left, right) for left, right in self.join_leaves()]
        terms += self.local_conditions(a, b)
        terms.append(self.temporal(a, b))
        self.rng.shuffle(terms)
        return (
            'import module namespace fr = "urn:feedrouter:stream:1";\n'
            f"for {a} in fr:stream()//item{self.binding_predicate()},\n"
            f"    {b} in fr:stream({xquery_string(feed) if feed else ''})//item{self.binding_predicate()}\n"
            "where " + "\n  and ".join(terms) + "\n"
            f"return {self.result(a, b)}"
        )

    def join_leaves(self) -> list[tuple[str, str]]:
        """k (left leaf, right leaf) pairs: k distinct left leaves, as in the paper, or a shared one."""
        k = self.joins.draw(self.rng) + 1
        pairs = [(left, self.partner(left)) for left in self.rng.sample(LEAVES, k)]
        if k >= 2 and self.rng.random() < self.knobs.shared_leaf:
            pairs[-1] = self.shared(pairs[:-1]) or pairs[-1]
        return pairs

    def partner(self, left: str) -> str:
        overlaps = _OVERLAPS.get(left, ())
        return self.rng.choice(overlaps) if overlaps and self.rng.random() < self.knobs.cross_field else left

    def shared(self, pairs: list[tuple[str, str]]) -> tuple[str, str] | None:
        """A join that compares the left leaf of one of ``pairs`` with another right leaf, if any can."""
        for left, right in self.rng.sample(pairs, len(pairs)):
            others = [leaf for leaf in (left, *_OVERLAPS.get(left, ())) if leaf != right]
            if others:
                return left, self.rng.choice(others)
        return None

    def value_join(self, a: str, b: str, left: str, right: str) -> str:
        # mostly written as the brief's examples are, the second variable first
        if self.rng.random() < 0.2:
            return f"{a}/{left} = {b}/{right}"
        return f"{b}/{right} = {a}/{left}"

    def local_conditions(self, a: str, b: str) -> list[str]:
        if self.rng.random() >= self.knobs.local_conditions:
            return []
        return [self.local_condition(self.rng.choice((a, a, b))) for _ in range(self.rng.randint(1, 2))]

    def local_condition(self, var: str) -> str:
        choices = (
            lambda: f"{var}/category = {self.literal('category')}",
            lambda: f"{var}/author = {self.literal('author')}",
            lambda: f"contains({var}/title, {self.literal('title')})",
            lambda: f"exists({var}/category)",
            lambda: f'{var}/@lang = "en"',
            lambda: f'not({var}/@lang = "{self.vocabulary.lang(1)}")',
            lambda: f"not(exists({var}/ticker))",
        )
        return self.rng.choice(choices)()

    def binding_predicate(self) -> str:
        if self.rng.random() >= self.knobs.binding_predicates:
            return ""
        choices = (
            lambda: f"[category = {self.literal('category')}]",
            lambda: '[@lang = "en"]',
            lambda: "[ticker]",
            lambda: f"[contains(title, {self.literal('title')})]",
        )
        return self.rng.choice(choices)()

    def literal(self, leaf: str) -> str:
        """A value of ``leaf`` (a title's first word), drawn uniformly: subscribers ask for rare
        values too, and those keep a subscription selective."""
        v = self.vocabulary
        if leaf == "category":
            return xquery_string(v.category(self.rng.randrange(v.categories)))
        if leaf == "author":
            return xquery_string(v.author(self.rng.randrange(v.authors)))
        return xquery_string(v.title(self.rng.randrange(v.titles)).split()[0])

    def temporal(self, a: str, b: str) -> str:
        kind = "within" if self.rng.random() < self.knobs.within else "followed-by"
        first, second = (b, a) if self.rng.random() < self.knobs.reversed_temporal else (a, b)
        return f'fr:{kind}({first}, {second}, "{self.window()}")'

    def window(self) -> str:
        low, high = self.knobs.windows_hours
        if self.rng.random() < self.knobs.minutes:
            return f"PT{self.rng.randint(low * 60, high * 60)}M"
        return f"PT{self.rng.randint(low, high)}H"

    def result(self, a: str, b: str) -> str:
        """1 to 3 paths, from both variables when there are two or more."""
        leaves = [leaf for leaf in LEAVES if not leaf.startswith("@")]
        count = self.rng.randint(1, 3)
        owners = [a, b, self.rng.choice((a, b))][:count] if count > 1 else [self.rng.choice((a, b))]
        paths = [f"{var}/{self.rng.choice(leaves)}" for var in owners]
        if self.rng.random() < self.knobs.sequence_return:
            return "(" + ", ".join(paths) + ")"
        name = self.rng.choice(_ELEMENTS)
        attribute = ""
        if self.rng.random() < self.knobs.attribute_template:
            attribute = f' id="{{ {self.rng.choice((a, b))}/guid }}"'
        return f"<{name}{attribute}>" + "".join(f"{{ {path} }}" for path in paths) + f"</{name}>"
