"""Object keys that cannot escape their store's prefix.

A key is relative to a store's root URI: ``/``-separated segments, none empty, ``.`` or ``..``, with
no backslash and no control character. Keys built from catalog names (feeds, subscribers,
subscriptions) go through :func:`component`, which percent-encodes a name into exactly one segment
(:func:`feedrouter.paths.safe_component`), so a name like ``../../etc`` stays inside its folder.

Example:
    >>> join_key(component("news"), component("../x"), "a.plan")
    'news/%2E.%2Fx/a.plan'
"""

from __future__ import annotations

import re

from feedrouter.errors import StorageError
from feedrouter.paths import safe_component

#: S3 allows 1024 bytes of key; the store's own prefix is added on top, so leave room for it.
MAX_KEY_BYTES = 900
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\]")


def component(name: str) -> str:
    """One key segment from a catalog name; unsafe characters are percent-encoded.

    Raises:
        StorageError: [FR500] when the name is empty or too long for one segment.
    """
    try:
        return safe_component(name)
    except ValueError as exc:
        raise StorageError(str(exc), code="FR500") from None


def validate_key(key: str) -> str:
    """Return ``key`` unchanged when it is a safe relative key; raise StorageError otherwise."""
    if not key:
        raise StorageError("an object key cannot be empty", code="FR500")
    if key.startswith("/") or _FORBIDDEN.search(key):
        raise StorageError(f"unsafe object key {key[:80]!r}: absolute or control characters", code="FR500")
    if any(segment in ("", ".", "..") for segment in key.split("/")):
        raise StorageError(f"unsafe object key {key[:80]!r}: empty, '.' or '..' segment", code="FR500")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise StorageError(f"object key {key[:80]!r}… is longer than {MAX_KEY_BYTES} bytes", code="FR500")
    return key


def validate_prefix(prefix: str) -> str:
    """A key prefix for listing: empty, or a safe key with an optional trailing ``/``."""
    if prefix == "":
        return prefix
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def join_key(*segments: str) -> str:
    """Join already-safe segments (or sub-keys) with ``/`` and validate the result."""
    return validate_key("/".join(segments))
