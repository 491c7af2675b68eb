"""Where ``feedrouter route`` writes: inputs found, output names that never collide, and the run
that writes each message's results, refused results and rejection reports as files.

Results are named after the input's path relative to the ``--input`` it was found under (see
:class:`OutputNames`), so two inputs never write the same file. Files are written with
:meth:`Path.write_bytes`, so their mode is what the umask gives (0644 under the usual 022).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from feedrouter.console import escape_name, escape_text
from feedrouter.errors import FeedrouterError

if TYPE_CHECKING:
    from feedrouter.delivery.messages import Splitter
    from feedrouter.delivery.routing import Routed, Routes
    from feedrouter.errors import RoutingError

_DOCUMENT_SUFFIXES = (".xml", ".xml.gz")
#: The folder of rejection reports below ``--output``; a subscription of that id gets another folder.
REJECTED = "_rejected"
#: The longest output file or folder name (file systems allow 255 bytes; reports add a suffix).
MAX_NAME = 200
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._=-")


@dataclass(frozen=True)
class InputDocument:
    """A file to route and its name relative to the ``--input`` it was found under."""

    path: Path
    relative: tuple[str, ...]


def iter_documents(inputs: tuple[Path, ...]) -> Iterator[InputDocument]:
    """Every .xml and .xml.gz file named or found below the named folders, in sorted order."""
    for item in inputs:
        if item.is_dir():
            found = (p for p in item.rglob("*") if p.is_file() and p.name.endswith(_DOCUMENT_SUFFIXES))
            for path in sorted(found):
                yield InputDocument(path, path.relative_to(item).parts)
        else:
            yield InputDocument(item, (item.name,))


def document_stem(name: str) -> str:
    """The file name without ``.xml`` or ``.xml.gz`` (the whole name if nothing would be left)."""
    for suffix in _DOCUMENT_SUFFIXES[::-1]:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def output_component(name: str, suffix: str = "") -> str:
    """``name`` as one file or folder name: percent-encoded like :func:`feedrouter.paths.safe_component`
    (distinct names stay distinct, nothing escapes its folder) and bounded: past :data:`MAX_NAME`
    it is cut and ends in ``~`` and a digest of the whole name (``~`` is always encoded otherwise)."""
    raw = _utf8(name)
    encoded = "".join(chr(b) if b in _SAFE_BYTES else f"%{b:02X}" for b in raw)
    if encoded.startswith(".") or not encoded:
        encoded = "%2E" + encoded[1:] if encoded else "%00"
    if len(encoded) + len(suffix) > MAX_NAME:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        cut = encoded[: MAX_NAME - len(suffix) - 17]
        cut = re.sub(r"%[0-9A-F]?$", "", cut)  # never end on half an escape
        encoded = f"{cut}~{digest}"
    return encoded + suffix


def _utf8(name: str) -> bytes:
    """File names that are not UTF-8 arrive with surrogate escapes; lone surrogates from JSON too."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def subscription_folder(sid: str) -> str:
    """The output folder of a subscription; never the rejection reports' folder."""
    folder = output_component(sid)
    return "%5F" + folder[1:] if folder == REJECTED else folder


@dataclass
class OutputNames:
    """Gives each input document an output name no other input of the run has.

    The name mirrors the path relative to its ``--input`` (``x/msg.xml`` -> ``x/msg``), each part
    through :func:`output_component`. If two inputs still meet (``--input a/msg.xml --input
    b/msg.xml``, or names that differ only in case), the later one's stem gets ``~`` and a digest of
    its resolved path: the same command names the same files the same way. The same file named twice
    is routed once.
    """

    _taken: dict[tuple[str, ...], Path] = field(default_factory=dict)

    def assign(self, document: InputDocument) -> tuple[str, ...] | None:
        """The output name's parts (folders, then the stem), or None for a file already routed."""
        resolved = document.path.resolve()
        *folders, file_name = document.relative
        stem = document_stem(file_name)
        parts = (*map(output_component, folders), output_component(stem))
        if self._key(parts) in self._taken and self._taken[self._key(parts)] != resolved:
            digest = hashlib.sha256(_utf8(str(resolved))).hexdigest()[:12]
            parts = (*parts[:-1], output_component(stem, suffix=f"~{digest}"))
        if self._taken.get(self._key(parts)) == resolved:
            return None
        self._taken[self._key(parts)] = resolved
        return parts

    @staticmethod
    def _key(parts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(part.casefold() for part in parts)  # case-insensitive file systems


@dataclass
class RouteStats:
    """What a ``feedrouter route`` run did, for its last line."""

    documents: int = 0
    rejected: int = 0
    results: int = 0
    bytes: int = 0
    refused: int = 0  # results refused to one subscription (a result limit, an error of its plan)


@dataclass
class RouteRun:
    """One ``feedrouter route`` run: the routing loop's outcomes for each input, written as files.

    Results go to ``OUTPUT/<subscription>/<name>.xml``; a result refused to one subscription
    (FR310/FR311 result limits, FR312 an internal error of its plan) gets a report in its place,
    ``OUTPUT/<subscription>/<name>.error.json``; a document that cannot be routed at all gets
    ``OUTPUT/_rejected/<name>.error.json``.
    """

    router: Routes
    splitter: Splitter
    output: Path
    containers: bool
    names: OutputNames = field(default_factory=OutputNames)
    stats: RouteStats = field(default_factory=RouteStats)

    def route_file(self, document: InputDocument) -> None:
        """Route every message of one input; a failure is reported against it and the run goes on."""
        from feedrouter.delivery.routing import route_objects

        parts = self.names.assign(document)
        if parts is None:
            return
        try:
            with document.path.open("rb") as stream:
                objects = [(str(document.path), stream)]
                for routed in route_objects(self.router, self.splitter, objects, internal_errors="reject"):
                    self._take(routed, parts)
        except OSError as exc:
            if exc.filename not in (None, str(document.path)):
                raise  # the output cannot be written: that ends the run (with one clean message)
            self.stats.documents += 1  # the input is unreadable, or gone since it was listed
            self._reject(parts, str(document.path), exc)

    def _take(self, routed: Routed, parts: tuple[str, ...]) -> None:
        """Write one message's outcome: its results, its refused results, or its rejection."""
        message = routed.message
        self.stats.documents += 1
        name = (*parts[:-1], f"{parts[-1]}~r{message.index}") if self.containers else parts
        source = message.label if self.containers else message.source
        if routed.error is not None:
            self._reject(name, source, routed.error)
            return
        for sid, data in routed.results.items():
            self._write(self._path(sid, name, ".xml"), data)
        for sid, failure in routed.failures.items():
            self._refuse(self._path(sid, name, ".error.json"), source, sid, failure)

    def _path(self, sid: str, name: tuple[str, ...], suffix: str) -> Path:
        return Path(self.output, subscription_folder(sid), *name[:-1], f"{name[-1]}{suffix}")

    def _write(self, target: Path, data: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.stats.results += 1
        self.stats.bytes += len(data)

    def _refuse(self, target: Path, source: str, sid: str, failure: RoutingError) -> None:
        self.stats.refused += 1
        report = {"source": source, "subscription": sid, "error": str(failure), "code": failure.code}
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report, indent=2), encoding="utf-8")
        click.echo(f"refused {escape_name(sid)} a result of {escape_name(source)}: {failure.code}", err=True)

    def _reject(self, name: tuple[str, ...], source: str, exc: BaseException) -> None:
        self.stats.rejected += 1
        report = {
            "source": source,
            "error": str(exc) if isinstance(exc, FeedrouterError | OSError) else f"internal error: {exc!r}",
            "code": getattr(exc, "code", None),
            "line": getattr(exc, "line", None),
            "column": getattr(exc, "column", None),
        }
        target = Path(self.output, REJECTED, *name[:-1], f"{name[-1]}.error.json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report, indent=2), encoding="utf-8")
        click.echo(f"rejected {escape_name(source)}: {escape_text(report['error'])}", err=True)
