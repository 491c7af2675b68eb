"""Loads the hostile names and prefixes corpus (the JSON files beside this module)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((HERE / name).read_text(encoding="utf-8"))


PREFIXES = _load("prefixes.json")
NAMES = _load("names.json")
#: (prefix, why) pairs that must be refused; canonical prefixes that must be accepted.
REFUSED_PREFIXES: list[tuple[str, str]] = [tuple(pair) for pair in PREFIXES["refused"]]  # type: ignore[misc]
ACCEPTED_PREFIXES: list[str] = PREFIXES["accepted"]
REFUSED_NAMES: list[tuple[str, str]] = [tuple(pair) for pair in NAMES["refused"]]  # type: ignore[misc]
ACCEPTED_NAMES: list[str] = NAMES["accepted"]
