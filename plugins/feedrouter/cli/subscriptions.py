"""The subscriptions file of ``feedrouter route`` and ``explain``: JSON ``{id: text}``, JSON Lines
``{"id": …, "text": …}`` or a folder of ``.xq`` files, read strictly.

A file of the wrong shape (not JSON, an entry without id or text, a text that is not a string, an
empty or repeated id, nothing in it) stops the command with one message naming the file and, where
it has one, the line: never a traceback, never a subscription silently skipped for its shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from feedrouter.console import escape_name


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
        return _checked(path, [(p.stem, read_text(p), 0) for p in sorted(path.glob("*.xq"))])
    raw = read_text(path)
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


def read_text(path: Path) -> str:
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
