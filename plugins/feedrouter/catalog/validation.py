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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from feedrouter.catalog.compiled import FeedConfig, Target
from feedrouter.catalog.outcomes import Outcome
from feedrouter.errors import StorageError
from feedrouter.hours import hour_path
from feedrouter.paths import MAX_COMPONENT
from feedrouter.storage.keys import component, join_key
from feedrouter.storage.uris import overlaps, prefix_problem

#: A delivery key as long as any the batches write below a subscription's folder (part files,
#: manifests and markers are shorter): checked once per name, so the batch never meets a longer one.
_SAMPLE_TAIL = (hour_path(datetime(2026, 1, 1)), "part-00000.xml")
INVALID_TARGET = "FR403"
CONFLICT = "FR404"


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
