"""What a plan build checks before a subscription may deliver: where its results would go.

Compiling a text says whether it is a query; this module says whether its results can be delivered
without harming anyone else, so that nothing a batch could fail on reaches a plan:

* the subscription's name fits one key segment once encoded (FR403);
* its subscriber's output prefix is canonical (:mod:`feedrouter.storage.uris`) and stays clear of
  every location feedrouter itself owns: any feed's input and quarantine prefixes, the plans store
  (FR403; both directions, since a prefix that *contains* an input prefix can deliver into it);
* no two subscriptions deliver to one folder: the folder belongs to the one created first (lowest
  id), every later one is invalid with FR404 naming it, so a new row can never take a folder away
  from a subscriber already served.

Each problem becomes an invalid :class:`~feedrouter.catalog.outcomes.Outcome` of that subscription
only; the rest of the feed builds and routes as usual.

It also says whether a feed can take join subscriptions (:func:`has_event_time`): its event-time
settings must name a path a join can read a time from (:func:`event_time_path_problem`: an absolute
location path lxml compiles, with no function but ``text()``, no variable, no namespace prefix, no
union) in a known format, within the bounds of :mod:`feedrouter.limits`. The catalog's CHECKs hold
the shape SQL can see; the rest is checked here, at build time.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from lxml import etree

from feedrouter.catalog.compiled import FeedConfig, Target
from feedrouter.catalog.outcomes import Outcome
from feedrouter.errors import StorageError, SubscriptionError
from feedrouter.hours import hour_path
from feedrouter.join.clock import FORMATS
from feedrouter.join.plan import clock_block
from feedrouter.limits import MAX_EVENT_TIME_PATH_CHARS, MAX_JOIN_HORIZON
from feedrouter.paths import MAX_COMPONENT
from feedrouter.storage.keys import component, join_key
from feedrouter.storage.uris import overlaps, prefix_problem

#: A delivery key as long as any the batches write below a subscription's folder (part files,
#: manifests and markers are shorter): checked once per name, so the batch never meets a longer one.
_SAMPLE_TAIL = (hour_path(datetime(2026, 1, 1)), "part-00000.xml")
INVALID_TARGET = "FR403"
CONFLICT = "FR404"

# XPath 1.0 string literals, set aside before looking for variables, calls and prefixes in a path.
_XPATH_LITERAL = re.compile(r"\"[^\"]*\"|'[^']*'")
# A name followed by "(": a function call or a node-type test (text(), node(), comment(), …).
_XPATH_CALL = re.compile(r"([A-Za-z_][\w.-]*)\s*\(")
# A tiny document to evaluate a path on: what it gives back says whether it is a location path.
_PROBE = etree.ElementTree(etree.Element("feedrouter-probe"))


@dataclass(frozen=True)
class Location:
    """A prefix feedrouter owns, and what it is (for the message)."""

    uri: str
    what: str


def owned_locations(feeds: Iterable[FeedConfig], plans_uri: str | None) -> list[Location]:
    """The input and quarantine prefixes of ``feeds`` (the default quarantine included), and the
    plans store: no subscriber's output prefix may overlap any of them."""
    owned = [Location(plans_uri.rstrip("/"), "the plans store")] if plans_uri else []
    for feed in feeds:
        owned.append(Location(feed.input_prefix.rstrip("/"), f"the input prefix of feed {feed.name!r}"))
        owned.append(
            Location(feed.quarantine_uri.rstrip("/"), f"the quarantine prefix of feed {feed.name!r}")
        )
    return owned


def target_problem(target: Target, feed: str, owned: Iterable[Location]) -> str | None:
    """Why results of ``target`` cannot be delivered, or None when they can."""
    return _name_problem(target, feed) or _prefix_problem(target, owned)


def invalid_targets(
    targets: Mapping[str, Target], feed: str, owned: Iterable[Location]
) -> dict[str, Outcome]:
    """An FR403 outcome for every target whose name or prefix cannot be delivered to."""
    owned = list(owned)
    problems = {sid: target_problem(target, feed, owned) for sid, target in targets.items()}
    return {sid: Outcome("invalid", INVALID_TARGET, why) for sid, why in problems.items() if why}


def conflicting_targets(targets: Mapping[str, Target]) -> dict[str, Outcome]:
    """An FR404 outcome for every target whose folder an earlier subscription (lower id) holds."""
    holders: dict[tuple[str, str], Target] = {}
    outcomes: dict[str, Outcome] = {}
    for sid, target in sorted(targets.items(), key=lambda item: item[1].catalog_id):
        folder = (target.output_prefix.rstrip("/"), target.subscription)
        holder = holders.setdefault(folder, target)
        if holder is not target:
            outcomes[sid] = Outcome("invalid", CONFLICT, _conflict_message(target, holder))
    return outcomes


def _name_problem(target: Target, feed: str) -> str | None:
    try:
        segment = component(target.subscription)
    except StorageError:
        return (
            f"subscription name {target.subscription[:40]!r}… is {encoded_length(target.subscription)} "
            "characters once encoded for its folder (each byte of a character outside A-Z a-z 0-9 . _ = - "
            f"takes 3); at most {MAX_COMPONENT}"
        )
    try:
        join_key(segment, component(feed), *_SAMPLE_TAIL)
    except StorageError as exc:
        return f"the delivery folder of subscription {target.subscription[:40]!r} cannot be a key: {exc}"
    return None


def _prefix_problem(target: Target, owned: Iterable[Location]) -> str | None:
    prefix = target.output_prefix
    problem = prefix_problem(prefix)
    if problem is not None:
        return f"output prefix {prefix[:120]!r} of subscriber {target.subscriber!r} is refused: {problem}"
    for location in owned:
        if overlaps(prefix.rstrip("/"), location.uri):
            return (
                f"output prefix {prefix!r} of subscriber {target.subscriber!r} overlaps {location.what} "
                f"({location.uri}), which feedrouter owns: give the subscriber a prefix of its own"
            )
    return None


def _conflict_message(target: Target, holder: Target) -> str:
    return (
        f"subscription {target.subscription!r} of subscriber {target.subscriber!r} would deliver to the "
        f"same folder as subscription {holder.catalog_id} of subscriber {holder.subscriber!r} "
        f"({holder.output_prefix.rstrip('/')}/{target.subscription}/…), which was created first and "
        "keeps it: give one of them another output prefix or subscription name"
    )


def encoded_length(name: str) -> int:
    """The length of ``safe_component(name)``: plain characters 1, every other UTF-8 byte 3."""
    encoded = sum(1 if _plain(ch) else 3 * len(ch.encode("utf-8", "surrogatepass")) for ch in name)
    return encoded + (2 if name.startswith(".") else 0)


def _plain(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in "._=-")


def has_event_time(feed: FeedConfig) -> bool:
    """True when ``feed`` can take join subscriptions: its event-time settings are usable."""
    return event_time_problem(feed) is None


def event_time_problem(feed: FeedConfig) -> str | None:
    """Why join subscriptions on ``feed`` cannot be served, or None when they can."""
    path = feed.event_time_path
    if path is None:
        return (
            f"feed {feed.name!r} has no event time: set feeds.event_time_path (and event_time_format) "
            "to where its messages keep it before subscribing joins to it"
        )
    problem = event_time_path_problem(path) or _join_bounds_problem(feed)
    if problem is not None:
        return f"the event-time settings of feed {feed.name!r} are refused: {problem}"
    return None


def event_time_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a feed's event-time path, or None when it can.

    A usable path is an absolute XPath 1.0 location path of at most
    :data:`~feedrouter.limits.MAX_EVENT_TIME_PATH_CHARS` characters that lxml compiles, selecting
    elements, attributes or ``text()`` nodes: no other function or node test, no variable, no
    namespace prefix (the catalog has nowhere to bind one), no union.
    """
    shown = f"event_time_path {path[:80]!r}"
    why = (
        _path_shape_problem(path)
        or _path_token_problem(path)
        or _path_compile_problem(path)
        or _path_router_problem(path)
    )
    return None if why is None else f"{shown} {why}"


def _path_router_problem(path: str) -> str | None:
    """Why the router cannot read a time with ``path`` (a path lxml compiles, that the join's
    clock block does not take: ``//@date``, a filter the subscription language lacks)."""
    try:
        clock_block("feed", path)
    except (SubscriptionError, TypeError) as exc:
        return f"is not a path the router reads an event time with ({str(exc).splitlines()[0]})"
    return None


def _path_shape_problem(path: str) -> str | None:
    if not path or len(path) > MAX_EVENT_TIME_PATH_CHARS:
        return f"is {len(path)} characters long; it must have 1 to {MAX_EVENT_TIME_PATH_CHARS}"
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        return "holds a control character"
    if not path.startswith("/"):
        return "is not absolute: start it with / (from the document node), e.g. /rss/channel/item/pubDate"
    return None


def _path_token_problem(path: str) -> str | None:
    bare = _XPATH_LITERAL.sub('""', path)
    if "$" in bare:
        return "uses a variable ($…); an event-time path has none to read"
    if "|" in bare:
        return "is a union of paths (|); give the one location path that holds the time"
    calls = sorted({name for name in _XPATH_CALL.findall(bare) if name != "text"})
    if calls:
        return f"calls {', '.join(n + '()' for n in calls)}; text() is the only function or node test allowed"
    if "namespace::" in bare:
        return "uses the namespace axis; select an element, an attribute or text()"
    if ":" in bare.replace("::", ""):
        return (
            "uses a namespace prefix; prefixed names are not supported in event-time paths "
            "(there is nowhere to bind the prefix): the event time must be in no namespace"
        )
    return None


def _path_compile_problem(path: str) -> str | None:
    try:
        found = etree.XPath(path)(_PROBE)
    except etree.XPathError as exc:
        return f"is not an XPath 1.0 expression lxml can compile ({exc})"
    if not isinstance(found, list):
        return f"is an expression giving a {type(found).__name__}, not a location path selecting nodes"
    if path.strip() == "/":
        return "selects the document node; name the element, attribute or text() holding the time"
    return None


def _join_bounds_problem(feed: FeedConfig) -> str | None:
    if feed.event_time_format not in FORMATS:
        return f"event_time_format {feed.event_time_format!r} is none of {', '.join(FORMATS)}"
    if not timedelta(0) < feed.max_join_window <= MAX_JOIN_HORIZON:
        return f"max_join_window {feed.max_join_window} is not above 0 and at most {MAX_JOIN_HORIZON}"
    if not timedelta(0) <= feed.allowed_lateness <= MAX_JOIN_HORIZON:
        return f"allowed_lateness {feed.allowed_lateness} is not from 0 to {MAX_JOIN_HORIZON}"
    return None
