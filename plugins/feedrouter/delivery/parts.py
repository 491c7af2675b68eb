"""Part files: one subscription's results of one hour, in input order, each with its provenance.

A part is a small XML document; each result is wrapped with where it came from and how long it is::

    <?xml version="1.0" encoding="UTF-8"?>
    <fr:part xmlns:fr="urn:feedrouter:delivery:1" feed="news" subscription="titles"
             hour="2026-11-22T16" number="0">
    <fr:result source="a.xml" index="0" digest="<sha256 of the message>" bytes="18"><title>…</title>
    </fr:result>
    </fr:part>

(drawn over several lines here; in a part, each start tag and each result is one line).

Format 2 adds the results of join subscriptions (issue 16), one per pair of messages, each with both
provenances: ``<fr:pair left-feed="…" left-hour="…" left-source="…" left-index="…" left-digest="…"
right-feed="…" … bytes="…">…</fr:pair>`` (the left message is the one the subscription's first
``for`` binds). A part holding pairs says ``format="2"`` on ``fr:part``; :func:`read_part` reads both.

The wrapper uses a prefixed namespace, so unprefixed result elements keep their own namespace. The
``bytes`` attribute lets :func:`read_part` hand back each result byte for byte. Results are added in
(source key, message index) order and a new part starts before one would pass ``max_bytes`` (a
single larger result gets a part of its own), so the parts depend only on the results.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from feedrouter.delivery.layout import part_name

NAMESPACE = "urn:feedrouter:delivery:1"
DEFAULT_MAX_PART_BYTES = 64 * 1024 * 1024
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
_TAIL = b"</fr:part>\n"
_RESULT_END = b"</fr:result>\n"
_RESULT_START = re.compile(
    rb'<fr:result source="([^"]*)" index="(\d+)" digest="([0-9a-f]{64})" bytes="(\d+)">'
)
_SIDE = (
    rb'%s-feed="([^"]*)" %s-hour="([^"]*)" %s-source="([^"]*)" %s-index="(\d+)" '
    rb'%s-digest="([0-9a-f]{64})"'
)
_PAIR_START = re.compile(
    rb"<fr:pair " + _SIDE % ((b"left",) * 5) + rb" " + _SIDE % ((b"right",) * 5) + rb' bytes="(\d+)">'
)
_PAIR_END = b"</fr:pair>\n"


@dataclass(frozen=True)
class Provenance:
    """Where one message of a join pair came from: its feed, arrival hour, input key, index, digest."""

    feed: str
    hour: str
    source: str
    index: int
    digest: str

    def attributes(self, side: str) -> str:
        return (
            f'{side}-feed="{_attr(self.feed)}" {side}-hour="{_attr(self.hour)}" '
            f'{side}-source="{_attr(self.source)}" {side}-index="{self.index}" {side}-digest="{self.digest}"'
        )


@dataclass(frozen=True)
class Result:
    """One delivered result: the message it came from (key, index, digest) and its bytes."""

    source: str
    index: int
    digest: str
    body: bytes
    #: a join subscription's result: the pair's two messages (format 2); source, index and digest
    #: are then the left one's
    pair: tuple[Provenance, Provenance] | None = None

    @classmethod
    def of_pair(cls, left: Provenance, right: Provenance, body: bytes) -> Result:
        return cls(left.source, left.index, left.digest, body, (left, right))

    def entry(self) -> bytes:
        """The result as it appears in a part."""
        if self.pair is not None:
            left, right = self.pair
            sides = f"{left.attributes('left')} {right.attributes('right')}"
            start = f'<fr:pair {sides} bytes="{len(self.body)}">'
            return start.encode("utf-8") + self.body + _PAIR_END
        start = (
            f'<fr:result source="{_attr(self.source)}" index="{self.index}" digest="{self.digest}" '
            f'bytes="{len(self.body)}">'
        )
        return start.encode("utf-8") + self.body + _RESULT_END


@dataclass(frozen=True)
class PartHeader:
    """What every part of one delivery says about itself."""

    feed: str
    subscription: str
    hour: str
    format: int = 1  # 2: the part holds join pairs

    def start(self, number: int) -> bytes:
        version = f' format="{self.format}"' if self.format > 1 else ""
        start = (
            f'<fr:part xmlns:fr="{NAMESPACE}" feed="{_attr(self.feed)}" '
            f'subscription="{_attr(self.subscription)}" hour="{_attr(self.hour)}" number="{number}"'
            f"{version}>\n"
        )
        return _DECLARATION + start.encode()


@dataclass(frozen=True)
class Part:
    """A rendered part file."""

    number: int
    data: bytes
    results: int

    @property
    def name(self) -> str:
        return part_name(self.number)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class PartWriter:
    """Collects entries into parts of at most ``max_bytes`` (unless one entry alone is larger)."""

    def __init__(self, header: PartHeader, max_bytes: int = DEFAULT_MAX_PART_BYTES) -> None:
        self.header = header
        self.max_bytes = max_bytes
        self._number = 0
        self._entries: list[bytes] = []
        self._size = 0

    def add(self, result: Result) -> Part | None:
        """Add a result; returns the finished previous part when this one starts a new part."""
        entry = result.entry()
        finished = None
        if self._entries and self._size + len(entry) > self._room():
            finished = self.finish()
        self._entries.append(entry)
        self._size += len(entry)
        return finished

    def finish(self) -> Part | None:
        """The part being collected (None when it is empty); the next one gets the next number."""
        if not self._entries:
            return None
        data = self.header.start(self._number) + b"".join(self._entries) + _TAIL
        part = Part(self._number, data, len(self._entries))
        self._number, self._entries, self._size = self._number + 1, [], 0
        return part

    def _room(self) -> int:
        return self.max_bytes - len(self.header.start(self._number)) - len(_TAIL)


def write_parts(
    header: PartHeader, results: Iterable[Result], max_bytes: int = DEFAULT_MAX_PART_BYTES
) -> Iterator[Part]:
    """The parts of ``results`` (already in input order), one at a time as each fills up."""
    writer = PartWriter(header, max_bytes)
    for result in results:
        finished = writer.add(result)
        if finished is not None:
            yield finished
    last = writer.finish()
    if last is not None:
        yield last


def read_part(data: bytes) -> list[Result]:
    """The results of a part, each body exactly as routed (for readers and tests)."""
    position = data.index(b">", data.index(b"<fr:part")) + 2
    results = []
    while not data.startswith(_TAIL, position):
        match = _RESULT_START.match(data, position)
        if match is not None:
            end = match.end() + int(match[4])
            source = html.unescape(match[1].decode("utf-8"))
            results.append(Result(source, int(match[2]), match[3].decode("ascii"), data[match.end() : end]))
            position = end + len(_RESULT_END)
            continue
        pair = _PAIR_START.match(data, position)
        if pair is None:
            raise ValueError(f"not a feedrouter part: no result or end at byte {position}")
        end = pair.end() + int(pair[11])
        left, right = _provenance(pair.groups()[0:5]), _provenance(pair.groups()[5:10])
        results.append(Result.of_pair(left, right, data[pair.end() : end]))
        position = end + len(_PAIR_END)
    return results


def _provenance(groups: tuple[bytes, ...]) -> Provenance:
    feed, hour, source, index, digest = (html.unescape(g.decode("utf-8")) for g in groups)
    return Provenance(feed, hour, source, int(index), digest)


def _attr(value: str) -> str:
    """Escape an attribute value (double-quoted); whitespace controls as references survive parsing."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return escaped.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")
