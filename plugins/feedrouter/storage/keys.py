"""Object keys that cannot escape their store's prefix.

A key is relative to a store's root URI: ``/``-separated segments, none empty, ``.`` or ``..``, with
no backslash and no control character. Keys built from catalog names (feeds, subscribers,
subscriptions) go through :func:`component`, which percent-encodes a name into exactly one segment
(:func:`feedrouter.paths.safe_component`), so a name like ``../../etc`` stays inside its folder.
Keys are literal (no ``%`` decoding happens below this layer); an unsafe key is refused with FR503.
Whole store URIs (prefixes) have one canonical spelling: :mod:`feedrouter.storage.uris`.

Example:
    >>> join_key(component("news"), component("../x"), "a.plan")
    'news/%2E.%2Fx/a.plan'
"""

from __future__ import annotations

import re

from feedrouter.errors import error
from feedrouter.paths import safe_component

#: S3 allows 1024 bytes of key; the store's own prefix is added on top, so leave room for it.
MAX_KEY_BYTES = 900
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\]")


def component(name: str) -> str:
    """One key segment from a catalog name; unsafe characters are percent-encoded.

    Raises:
        StorageError: [FR503] when the name is empty or too long for one segment.
    """
    try:
        return safe_component(name)
    except ValueError as exc:
        raise error("FR503", str(exc)) from None


def validate_key(key: str) -> str:
    """Return ``key`` unchanged when it is a safe relative key; StorageError (FR503) otherwise."""
    problem = key_problem(key)
    if problem is not None:
        raise error("FR503", f"unsafe object key {key[:80]!r}: {problem}")
    return key


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a safe relative key, or None when it is."""
    if not key:
        return "an object key cannot be empty"
    if key.startswith("/") or _FORBIDDEN.search(key):
        return "absolute, or a backslash or control character"
    if any(segment in ("", ".", "..") for segment in key.split("/")):
        return "empty, '.' or '..' segment"
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        return f"longer than {MAX_KEY_BYTES} bytes"
    return None


def validate_prefix(prefix: str) -> str:
    """A key prefix for listing: empty, or a safe key with an optional trailing ``/``."""
    if prefix == "":
        return prefix
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def join_key(*segments: str) -> str:
    """Join already-safe segments (or sub-keys) with ``/`` and validate the result."""
    return validate_key("/".join(segments))
