"""Every bound a document, a subscription or a result may reach, with its default, in one place.

A feed's documents, its subscribers' texts and the results routed for them come from people
feedrouter does not control; each resource they can consume is capped here, and the adapters
(catalog feed settings, CLI options) only choose other values for these fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

MIB = 1024 * 1024

#: A document (one message) larger than this is refused before parsing (FR201).
DEFAULT_MAX_DOCUMENT_BYTES = 64 * MIB
#: Elements nested deeper than this are refused (FR202); libxml2's own default bound is 256.
DEFAULT_MAX_DEPTH = 256
#: Units of post-NFA evaluation work one document may cost before it is refused (FR205); a unit is
#: one node visited by one step of one shared operator, so ordinary documents use a tiny fraction.
DEFAULT_MAX_WORK = 50_000_000
#: Attribute look-ups that setting a document's internal-subset attribute defaults may take (FR203
#: past it): lxml looks through an element's attributes to set each one, so defaults set on elements
#: with many attributes cost the product (30,000 defaults on one element: seconds), not the sum.
MAX_DEFAULTING_LOOKUPS = 20_000_000
#: Result bytes one subscription may receive for one document (FR310 past it).
DEFAULT_MAX_RESULT_BYTES = 16 * MIB
#: Distinct result bytes one document may produce for all subscriptions together (FR311 past it).
DEFAULT_MAX_DOCUMENT_RESULT_BYTES = 256 * MIB
#: Characters of one subscription text (FR114 past it; the catalog CHECKs the same bound).
DEFAULT_MAX_SUBSCRIPTION_CHARS = 64 * 1024
#: Characters of a feed's event-time path (the catalog CHECKs the same bound).
MAX_EVENT_TIME_PATH_CHARS = 512
#: The longest join window a feed's join subscriptions may use, unless the feed sets another.
DEFAULT_MAX_JOIN_WINDOW = timedelta(hours=24)
#: How late a message may arrive after its event time and still join, unless the feed says otherwise.
DEFAULT_ALLOWED_LATENESS = timedelta(hours=1)
#: The most a feed may set for either bound: a join stage reads back window + lateness of witnesses,
#: so this caps what one hour's join reads.
MAX_JOIN_HORIZON = timedelta(days=7)
#: Qualifying pairs one join subscription may have in one hour (FR313 past it: withheld); a join on
#: a low-cardinality field can give 10^8 pairs, which are never held.
DEFAULT_MAX_JOIN_PAIRS = 100_000
#: Result bytes one join subscription's hour may deliver (FR313 past it).
DEFAULT_MAX_JOIN_RESULT_BYTES = 64 * MIB
#: The most a feed may set for those two (the catalog CHECKs the same bounds): a stage holds the
#: pairs of a few subscriptions at once (its delivery threads, twice over), and an hour's results
#: are one subscriber's delivery.
MAX_JOIN_PAIRS = 1_000_000
MAX_JOIN_RESULT_BYTES = 256 * MIB


@dataclass(frozen=True)
class DocumentLimits:
    """Bounds on one document: its size, its nesting and the evaluation work it may cause."""

    max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_work: int = DEFAULT_MAX_WORK


@dataclass(frozen=True)
class ResultLimits:
    """Bounds on what one document delivers: per subscription, and for all of them together."""

    per_subscription: int = DEFAULT_MAX_RESULT_BYTES
    per_document: int = DEFAULT_MAX_DOCUMENT_RESULT_BYTES


@dataclass(frozen=True)
class JoinLimits:
    """Bounds on what one join subscription receives: per pair (its result, as a document's result
    for one subscription: FR310 past it, that pair alone refused) and per hour (its pairs and its
    results' bytes: FR313 past either, the hour withheld)."""

    per_pair: int = DEFAULT_MAX_RESULT_BYTES
    pairs_per_hour: int = DEFAULT_MAX_JOIN_PAIRS
    bytes_per_hour: int = DEFAULT_MAX_JOIN_RESULT_BYTES
