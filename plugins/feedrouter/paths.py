"""Names from catalogs and inputs made safe as single path or object-key components.

Subscription ids, subscriber and feed names end up in file paths and object keys. Whatever they
contain, the component built from them must stay one component: no separators, no ``.``/``..``, no
control characters. Unsafe characters are percent-encoded, so distinct names stay distinct.
"""

from __future__ import annotations

import re

_SAFE = re.compile(r"[A-Za-z0-9._=-]")
MAX_COMPONENT = 200


def safe_component(name: str) -> str:
    """Encode ``name`` as one path component that cannot escape its parent folder or prefix."""
    if not name:
        raise ValueError("an empty name cannot be a path component")
    encoded = "".join(ch if _SAFE.fullmatch(ch) else _percent(ch) for ch in name)
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    if len(encoded) > MAX_COMPONENT:
        raise ValueError(f"the name {name[:40]!r}… is too long for a path component")
    return encoded


def _percent(ch: str) -> str:
    return "".join(f"%{byte:02X}" for byte in ch.encode("utf-8"))
