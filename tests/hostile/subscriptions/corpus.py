"""Loads the hostile subscriptions corpus (``cases.json`` beside this module)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    """One hostile text and what it must give: ``expect`` is an FR1xx code, or "ok" for a Subscription."""

    name: str
    text: str
    expect: str
    why: str


def _text(row: dict) -> str:  # type: ignore[type-arg]
    if "text" in row:
        return row["text"]
    return row["head"] + row["repeat"] * row["times"] + row["tail"]


def load() -> list[Case]:
    """The cases, in file order (texts generated from their templates)."""
    rows = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))["cases"]
    return [Case(row["name"], _text(row), row.get("expect", "?"), row["why"]) for row in rows]


CASES = load()
