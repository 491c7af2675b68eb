"""The ``feedrouter`` command line: route local files, explain plans, generate sample data.

``feedrouter route`` runs the routing loop of the hourly batches (:func:`~feedrouter.delivery.
routing.route_objects`: gunzipped within the message limit, containers cut into records), so a
corrupt ``.gz``, a gzip bomb or a malformed document is reported and the run goes on, and a result
refused to one subscription (a result limit, an internal error of its plan) is reported beside the
results as it is in the batch's quarantine. Results are named after the input's path relative to
the ``--input`` it was found under (see :class:`OutputNames`), so two inputs never write the same
file. Every command ends in one message with a code, never a traceback
(:func:`feedrouter.console.reported`), and names are printed escaped.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from feedrouter import heap, logs
from feedrouter.console import echo, escape_name, escape_text, reported
from feedrouter.engine.nfa import format_path
from feedrouter.errors import FeedrouterError, error
from feedrouter.limits import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    DEFAULT_MAX_RESULT_BYTES,
)
from feedrouter.progress import task_bar, wanted

if TYPE_CHECKING:
    from feedrouter import Router
    from feedrouter.delivery.messages import Splitter
    from feedrouter.delivery.routing import Routed, Routes
    from feedrouter.errors import RoutingError
    from feedrouter.plan.index import Probe
    from feedrouter.plan.planner import SubscriptionPlan

_DOCUMENT_SUFFIXES = (".xml", ".xml.gz")
#: The folder of rejection reports below ``--output``; a subscription of that id gets another folder.
REJECTED = "_rejected"
#: The longest output file or folder name (file systems allow 255 bytes; reports add a suffix).
MAX_NAME = 200
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._=-")


class SubscriptionsFileError(click.ClickException):
    """The subscriptions file (or the DTD) cannot be read as such; the message names the line."""


def load_subscriptions(path: Path) -> list[tuple[str, str]]:
    """Subscriptions from JSON ``{id: text}``, JSON Lines ``{"id":…, "text":…}`` or a folder of .xq files.

    Raises:
        SubscriptionsFileError: malformed JSON, an entry without an id or text, a text that is not
            a string, an empty or repeated id, no subscriptions at all; the message names the file
            and the line.
    """
    if path.is_dir():
        return _checked(path, [(p.stem, _read_text(p), 0) for p in sorted(path.glob("*.xq"))])
    raw = _read_text(path)
    if path.suffix == ".jsonl":
        rows = [(_json(path, line, n), n) for n, line in enumerate(raw.split("\n"), 1) if line.strip()]
        return _checked(path, [(*_entry(path, row, n), n) for row, n in rows])
    data = _json(path, raw, 0, object_pairs_hook=list)
    if isinstance(data, list) and all(isinstance(pair, tuple) for pair in data):  # a JSON object
        seen: dict[str, int] = {}
        entries = []
        for key, text in data:
            seen[str(key)] = seen.get(str(key), -1) + 1
            entries.append((str(key), text, _line_of_key(raw, str(key), seen[str(key)])))
        return _checked(path, entries)
    if not isinstance(data, list):
        raise SubscriptionsFileError(f"{escape_name(path)}: expected a JSON object {{id: text}} or a list")
    return _checked(path, [(*_entry(path, row, 0), 0) for row in data])


def _read_text(path: Path) -> str:
    """A UTF-8 text file; one that is not UTF-8 is a clean error naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SubscriptionsFileError(f"{escape_name(path)}: not UTF-8 text ({exc.reason})") from exc


def _json(path: Path, text: str, line: int, **options: Any) -> Any:
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError as exc:
        where = line or exc.lineno
        raise SubscriptionsFileError(f"{escape_name(path)}, line {where}: not JSON ({exc.msg})") from exc


def _entry(path: Path, row: object, line: int) -> tuple[str, Any]:
    if isinstance(row, list) and all(isinstance(pair, tuple) for pair in row):
        row = dict(row)  # JSON objects arrive as lists of pairs (so that repeated keys stay visible)
    if not isinstance(row, dict) or "id" not in row or "text" not in row:
        where = f", line {line}" if line else ""
        raise SubscriptionsFileError(f'{escape_name(path)}{where}: expected {{"id": …, "text": …}}')
    return ("" if row["id"] is None else str(row["id"])), row["text"]


def _line_of_key(raw: str, key: str, occurrence: int = 0) -> int:
    """The line of the ``occurrence``-th ``"key":`` of a JSON object, for messages; 0 if not found."""
    for spelling in (json.dumps(key, ensure_ascii=False), json.dumps(key)):
        found = list(re.finditer(re.escape(spelling) + r"\s*:", raw))
        if len(found) > occurrence:
            return raw.count("\n", 0, found[occurrence].start()) + 1
    return 0


def _checked(path: Path, entries: list[tuple[str, Any, int]]) -> list[tuple[str, str]]:
    """The (id, text) pairs, after refusing empty and repeated ids with the line they are on."""
    if not entries:
        raise SubscriptionsFileError(f"{escape_name(path)}: no subscriptions in it")
    seen: set[str] = set()
    for sid, text, line in entries:
        where = f", line {line}" if line else ""
        if not isinstance(text, str):
            raise SubscriptionsFileError(
                f"{escape_name(path)}{where}: the text of '{escape_name(sid)}' is "
                f"{_json_kind(text)}, expected a string of XQuery"
            )
        if not sid.strip():
            raise SubscriptionsFileError(f"{escape_name(path)}{where}: a subscription has an empty id")
        if sid in seen:
            raise SubscriptionsFileError(
                f"{escape_name(path)}{where}: the id '{escape_name(sid)}' is repeated"
            )
        seen.add(sid)
    return [(sid, text) for sid, text, _line in entries]


def _json_kind(value: object) -> str:
    """How JSON spells the type of ``value`` (a parsed JSON value), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {int: "a number", float: "a number", list: "an array"}
    return kinds.get(type(value), "an object")


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


@click.group()
@click.version_option(package_name="feedrouter")
@click.option(
    "--log-format",
    callback=lambda ctx, param, value: _log_format(value),
    help="How log records go to stderr: text (default), or json (one object per line, the batch's "
    "fields as keys). Default: the FEEDROUTER_LOG_FORMAT setting.",
)
@click.pass_context
def main(ctx: click.Context, log_format: str) -> None:
    """feedrouter: route XML documents to many XQuery subscriptions in one shared pass."""
    ctx.with_resource(logs.configured(log_format))


def _log_format(value: str | None) -> str:
    """The log format from the option, else from feedrouter's settings (FEEDROUTER_LOG_FORMAT);
    the settings are validated here, so a bad one stops every command with its name (FR700)."""
    from feedrouter.errors import SettingsError
    from feedrouter.settings import load_settings

    origins = {"log_format": "--log-format"} if value is not None else None
    try:
        return load_settings(origins=origins, log_format=value).log_format
    except SettingsError as exc:
        raise click.UsageError(escape_text(exc)) from None


@main.command()
@click.option(
    "--subscriptions",
    "subscriptions_path",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="JSON {id: text}, JSON Lines, or a folder of .xq files.",
)
@click.option(
    "--input",
    "inputs",
    required=True,
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A document (.xml, .xml.gz) or a folder of them; repeatable.",
)
@click.option(
    "--output",
    "output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for results: OUTPUT/<subscription>/<input path>.xml",
)
@click.option(
    "--dtd",
    "dtd_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The feed's DTD: its entity declarations apply to the documents.",
)
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
@click.option(
    "--record-element",
    help="Inputs are containers: every outermost element of this name is one document.",
)
@click.option(
    "--max-document-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_DOCUMENT_BYTES,
    show_default=True,
    help="Larger documents (after gunzip) are rejected without being read further.",
)
@click.option(
    "--max-result-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_RESULT_BYTES,
    show_default=True,
    help="A larger result of one subscription for one document is refused (FR310) and reported.",
)
@click.option(
    "--max-document-result-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_DOCUMENT_RESULT_BYTES,
    show_default=True,
    help="Results of one document past this total are refused (FR311) and reported.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A progress bar over the inputs on stderr (default: when stderr is a terminal).",
)
def route(
    subscriptions_path: Path,
    inputs: tuple[Path, ...],
    output: Path,
    dtd_path: Path | None,
    strategy: str,
    record_element: str | None,
    max_document_bytes: int,
    max_result_bytes: int,
    max_document_result_bytes: int,
    progress: bool | None,
) -> None:
    """Route documents through subscriptions and write each match to the output folder."""
    from feedrouter import Router
    from feedrouter.delivery.messages import Splitter
    from feedrouter.engine.document import DocumentLimits
    from feedrouter.limits import ResultLimits

    with reported():
        subscriptions = load_subscriptions(subscriptions_path)
        dtd = _read_text(dtd_path) if dtd_path else None
        limits = DocumentLimits(max_bytes=max_document_bytes)
        result_limits = ResultLimits(max_result_bytes, max_document_result_bytes)
        router = Router.compile(
            subscriptions,
            dtd=dtd,
            strategy=strategy,
            on_error="collect",
            limits=limits,
            result_limits=result_limits,
        )
        for sid, error in router.errors.items():
            echo(f"skipped subscription {escape_name(sid)}: {error}", err=True)
        splitter = Splitter(record_element, dtd, max_document_bytes)
        output.mkdir(parents=True, exist_ok=True)
        run = _RouteRun(router, splitter, output, record_element is not None)
        documents = list(iter_documents(inputs))  # listed first: the bar needs the total
        if not documents:  # most often the wrong folder: say where it looked
            listed = ", ".join(escape_name(item) for item in inputs)
            click.echo(f"no .xml or .xml.gz documents under {listed}", err=True)
        started = time.perf_counter()
        with heap.settled(), task_bar("routing", wanted(progress)) as bar:
            for done, document in enumerate(documents, 1):
                run.route_file(document)
                bar(done, len(documents))
        elapsed = time.perf_counter() - started
    stats = run.stats
    refused = f", {stats.refused} results refused (.error.json beside them)" if stats.refused else ""
    click.echo(
        f"routed {stats.documents} documents through {len(router)} subscriptions in {elapsed:.2f}s: "
        f"{stats.results} results ({stats.bytes} bytes){refused}, {stats.rejected} documents rejected, "
        f"{len(router.errors)} subscriptions skipped; results under {escape_name(output)}"
    )


@dataclass
class _RouteRun:
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


@main.command()
@click.option(
    "--subscriptions", "subscriptions_path", required=True, type=click.Path(exists=True, path_type=Path)
)
@click.option("--id", "subscription_id", required=True, help="The subscription to explain.")
@click.option(
    "--dtd",
    "dtd_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The feed's DTD: shows which searches it lets the plan skip.",
)
@click.option("--strategy", default="auto", type=click.Choice(["auto", "F", "FW", "FWR"]), show_default=True)
def explain(subscriptions_path: Path, subscription_id: str, dtd_path: Path | None, strategy: str) -> None:
    """Say what a subscription shares with the others and why it is fast, then its plan in the
    paper's terms (paths in the shared NFA, operators, claims)."""
    from feedrouter import Router

    with reported():
        subscriptions = load_subscriptions(subscriptions_path)
        _check_known(subscriptions_path, [sid for sid, _text in subscriptions], subscription_id)
        dtd = _read_text(dtd_path) if dtd_path else None
        router = Router.compile(subscriptions, dtd=dtd, strategy=strategy, on_error="collect")
        if subscription_id in router.errors:
            raise router.errors[subscription_id]
        echo("\n".join(plain_explanation(router, subscription_id, with_dtd=dtd is not None)))
        echo("\nin the paper's terms:")
        echo(router.explain(subscription_id))


def _check_known(path: Path, ids: list[str], wanted_id: str) -> None:
    """FR301 naming the file (and the ids spelled closest) for an id the file does not have."""
    if wanted_id in ids:
        return
    close = difflib.get_close_matches(wanted_id, ids, n=3)
    hint = f"; did you mean {', '.join(repr(escape_name(c)) for c in close)}?" if close else ""
    raise error("FR301", f"{escape_name(path)} has no subscription {escape_name(wanted_id)!r}{hint}")


def plain_explanation(router: Router, sid: str, *, with_dtd: bool) -> list[str]:
    """What a user asks first, without the paper's vocabulary: what the subscription shares with
    the others, why it is fast, and what the DTD let it skip (or that there was none)."""
    plan = router._plans[sid]  # the router's compiled plans: explain() reads the same ones
    group = router._shared.group_of(plan)
    lines = [f"subscription {escape_name(sid)}:", "  shared with other subscriptions:"]
    lines += [f"    {line}" for line in _shared_parts(router, plan, len(group.members) - 1)]
    lines.append("  why it is fast:")
    lines += [f"    {line}" for line in _fast_parts(router, plan, group.probe)]
    lines.append("  what the DTD let it skip:" if with_dtd else "  the DTD:")
    lines += [f"    {line}" for line in _dtd_parts(plan, with_dtd)]
    return lines


def _shared_parts(router: Router, plan: SubscriptionPlan, same_plan: int) -> list[str]:
    states: set[int] = set()
    for held in plan.held:
        for pattern in held.pattern.walk():
            states.update(router.nfa.states_of(pattern.nav)[1:])
    shared = sum(1 for state in states if router.nfa.sharing_of(state) > 1)
    parts = [
        f"{shared} of the {len(states)} element steps it matches are matched once per document for "
        "every subscription that walks them too"
    ]
    if same_plan:
        parts.append(
            f"{same_plan} other subscription(s) ask for exactly the same result: it is built once "
            "and the same bytes go to each"
        )
    else:
        parts.append("no other subscription asks for exactly the same result")
    return parts


def _fast_parts(router: Router, plan: SubscriptionPlan, probe: Probe | None) -> list[str]:
    parts = [] if probe is None else [_probe_part(router, probe)]
    notes = " ".join(plan.main.describe())
    for phrase, part in _FAST_NOTES:
        if phrase in notes:
            parts.append(part)
    parts.append("each document is parsed once and walked once for all subscriptions together")
    return parts


#: A phrase of the paper's plan notes, and what it means for the user.
_FAST_NOTES = (
    (
        "shared join",
        "its comparison runs in one pass per document shared by every subscription comparing that field",
    ),
    (
        "merge semijoin",
        "conditions on other elements are checked by merging two lists already in document order",
    ),
    ("DupElim removed", "its matches cannot repeat, so no duplicate removal is done"),
)


def _probe_part(router: Router, probe: Probe) -> str:
    """Where the selection index files the subscription, said as the test a document must pass."""
    site = probe.site
    steps = format_path(router.nfa.path(site.pid))
    where = steps if site.last else f"step {site.field + 1} of {steps}"
    what = {"@cmp": f"attribute @{site.attribute}", "text()cmp": "text"}.get(site.kind.value, "value")
    how = "one hash look-up" if probe.op.value == "=" else "one binary search"
    return (
        f"its plan runs only for documents where {where} has {what} {probe.op.value} {probe.key!r}: "
        f"{how} per document finds every subscription waiting for such a value"
    )


def _dtd_parts(plan: SubscriptionPlan, with_dtd: bool) -> list[str]:
    if not with_dtd:
        return ["none given: pass the feed's --dtd to see which '//' and '*' searches it lets the plan skip"]
    parts = [_rewrite_part(note) for note in plan.notes if note.startswith("rewrite: ")]
    if plan.warning is not None:
        parts.append(f"it can never match a document valid under the DTD: {plan.warning.message}")
    return parts or ["nothing: the DTD fixes none of its '//' or '*' steps"]


def _rewrite_part(note: str) -> str:
    """``rewrite: //t -> /a/t (reason)`` as what the user gains: a step followed, not searched."""
    found = re.fullmatch(r"rewrite: (.+?) -> (.+?) \((.+)\)", note)
    if found is None:
        return note.removeprefix("rewrite: ")
    written, fixed, reason = found.groups()
    return f"{written} can only be {fixed} ({reason}): followed step by step, not searched"


@main.command()
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--dtd", "dtd_name", default="news", type=click.Choice(["news", "book", "bib"]), show_default=True
)
@click.option("--documents", default=50, show_default=True)
@click.option("--subscriptions", default=200, show_default=True)
@click.option("--seed", default=7, show_default=True)
def generate(output: Path, dtd_name: str, documents: int, subscriptions: int, seed: int) -> None:
    """Write sample documents, subscriptions and the DTD (for demos and benchmarks)."""
    from feedrouter.workload import dtds, generate_documents, generate_subscriptions

    with reported():
        graph = dtds.load(dtd_name)
        docs_dir = output / "documents"
        docs_dir.mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(generate_documents(graph, documents, seed=seed)):
            (docs_dir / f"msg-{i:05d}.xml").write_bytes(data)
        texts = generate_subscriptions(graph, subscriptions, seed=seed, form="mixed")
        subs = {f"sub-{i:05d}": text for i, text in enumerate(texts)}
        (output / "subscriptions.json").write_text(json.dumps(subs, indent=1), encoding="utf-8")
        (output / f"{dtd_name}.dtd").write_text(graph.text, encoding="utf-8")
    shown = escape_name(output)
    click.echo(f"wrote {documents} documents, {len(subs)} subscriptions and {dtd_name}.dtd under {shown}")


def _register_adapters() -> None:
    """Commands of the adapters; their modules import only click until a command runs."""
    from feedrouter.catalog.cli import register as register_catalog_commands
    from feedrouter.spark.cli import register as register_spark_commands

    register_catalog_commands(main)
    register_spark_commands(main)


_register_adapters()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
