"""Store URIs in one canonical spelling, so two spellings never name one folder.

A prefix (a subscriber's output, a feed's input or quarantine, the plans store) is accepted only in
the form canonicalization would leave unchanged; any other spelling is refused with FR503 rather
than repaired, because the catalog compares prefixes as text (conflicts, containment) and a
repaired copy would disagree with the row a user reads back.

The canonical form:

* ``s3://bucket/seg/seg`` — a lowercase bucket name (3-63 of ``a-z 0-9 . -``, no ``..``) and
  segments of the characters in :data:`PLAIN` only. S3 keys are literal: no ``%`` escapes, so no
  tool can decode them into something else.
* ``file:///seg/seg`` — an absolute path, empty authority; each segment is :data:`PLAIN` characters
  and ``%XX`` escapes (uppercase hex) of the bytes that are *not* plain: space, ``"#%'<>?[\\]^`{|}``
  and non-ASCII UTF-8. An escape of a plain character, of ``/`` or of a control byte is refused
  (``%2e%2e`` is not a way to write ``..``).
* Never: an empty, ``.`` or ``..`` segment, a query (``?``), a fragment (``#``), a control
  character, a backslash. One trailing ``/`` is allowed and dropped.

>>> canonical_prefix("s3://bucket/out/alice/")
's3://bucket/out/alice'
>>> canonical_prefix("file:///srv/out/my%20folder")
'file:///srv/out/my%20folder'
>>> is_within("s3://b/plans/news", "s3://b/plans")
True
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes

from feedrouter.errors import error

#: Characters a segment holds as themselves: RFC 3986's unreserved and sub-delims, ``:`` and
#: ``@``, less ``'`` (kept out so the same shapes can be written as SQL string literals).
PLAIN = "A-Za-z0-9!$&()*+,;=:@._~-"
#: ``%XX`` escapes a file:// segment may hold: exactly the bytes that are not plain, not ``/`` and
#: not control characters (0x20 " # % ' < > ? [ \\ ] ^ ` { | }), and non-ASCII characters as whole
#: UTF-8 sequences (a lead byte and its continuation bytes; Python checks the finer points).
_CONTINUATION = "%[89AB][0-9A-F]"
FILE_ESCAPE = (
    "(%(2[023579]|3[CEF]|5[B-E]|60|7[B-D])"
    f"|%(C[2-9A-F]|D[0-9A-F]){_CONTINUATION}"
    f"|%E[0-9A-F]({_CONTINUATION}){{2}}"
    f"|%F[0-4]({_CONTINUATION}){{3}})"
)
BUCKET = "[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"
S3_SEGMENT = f"[{PLAIN}]+"
FILE_SEGMENT = f"([{PLAIN}]|{FILE_ESCAPE})+"
#: Whole canonical URIs (one optional trailing slash); also the catalog's Postgres CHECK shapes.
S3_URI = f"s3://{BUCKET}(/{S3_SEGMENT})*/?"
FILE_URI = f"file://(/{FILE_SEGMENT})+/?"
#: A ``.`` or ``..`` segment anywhere (the shapes above let dots through as plain characters).
DOT_SEGMENT = r"/\.\.?(/|$)"
#: Octets of a prefix: leaves room below S3's 1024-byte keys for the delivery folders under it.
MAX_PREFIX_BYTES = 512
#: Octets of one decoded path segment (NAME_MAX of common file systems).
MAX_SEGMENT_BYTES = 255

_S3 = re.compile(S3_URI)
_FILE = re.compile(FILE_URI)
_DOTS = re.compile(DOT_SEGMENT)
#: What urllib.parse.quote must leave alone besides its own always-safe ``A-Za-z0-9_.-~``.
_SAFE_QUOTE = "!$&()*+,;=:@"


def canonical_prefix(uri: str, what: str = "prefix") -> str:
    """``uri`` without its trailing slash when it is canonical; StorageError (FR503) otherwise.

    Args:
        uri: an ``s3://`` or ``file://`` URI.
        what: what the URI is, for the message ("output prefix of subscriber 'acme'").
    """
    problem = prefix_problem(uri)
    if problem is not None:
        raise error("FR503", f"{what} {_show(uri)} is refused: {problem}")
    return uri[:-1] if uri.endswith("/") else uri


def prefix_problem(uri: str) -> str | None:
    """Why ``uri`` is not a canonical prefix, or None when it is."""
    if not isinstance(uri, str) or not uri:
        return "it is empty"
    if len(uri.encode("utf-8", "surrogatepass")) > MAX_PREFIX_BYTES:
        return f"it is longer than {MAX_PREFIX_BYTES} bytes"
    if "?" in uri or "#" in uri:
        return "it has a query or a fragment ('?' or '#'); write them as %3F and %23 in file:// paths"
    if _DOTS.search(uri) or "//" in uri.partition("://")[2].lstrip("/"):
        return "it has an empty, '.' or '..' segment"
    if ".." in uri:
        return "it contains '..' (refused anywhere, as the catalog's portable check does)"
    if uri.startswith("s3://"):
        return _s3_problem(uri)
    if uri.startswith("file://"):
        return _file_problem(uri)
    return "use s3://bucket/path or file:///absolute/path"


def is_within(inner: str, outer: str) -> bool:
    """True when canonical prefix ``inner`` is ``outer`` or lies below it (whole segments)."""
    inner, outer = inner.rstrip("/"), outer.rstrip("/")
    return inner == outer or inner.startswith(outer + "/")


def overlaps(a: str, b: str) -> bool:
    """True when one canonical prefix lies inside the other (or they are the same)."""
    return is_within(a, b) or is_within(b, a)


def file_uri(path: Path | str) -> str:
    """The canonical ``file://`` URI of an absolute local path (escapes exactly the non-plain bytes)."""
    path = Path(path)
    if not path.is_absolute():
        raise error("FR503", f"{_show(str(path))} is not an absolute path")
    raw = str(path).encode("utf-8", "surrogateescape")
    return "file://" + quote(raw, safe="/" + _SAFE_QUOTE)


def file_path(uri: str) -> Path:
    """The local path of a canonical ``file://`` URI (FR503 for any other spelling)."""
    canonical = canonical_prefix(uri, "file URI")
    if not canonical.startswith("file://"):
        raise error("FR503", f"{_show(uri)} is not a file:// URI")
    return Path(unquote_to_bytes(canonical[len("file://") :]).decode("utf-8", "surrogateescape"))


def suggestion(uri: str) -> str | None:
    """The canonical spelling of a ``file://`` URI that is merely spelled differently, if any."""
    if not uri.startswith("file://"):
        return None
    rest = uri[len("file://") :].split("?")[0].split("#")[0]
    if rest.startswith("localhost/"):
        rest = rest[len("localhost") :]
    if not rest.startswith("/"):
        return None
    segments: list[str] = []
    for segment in unquote_to_bytes(rest).decode("utf-8", "surrogateescape").split("/"):
        if segment == "..":
            if not segments:
                return None
            segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return file_uri("/" + "/".join(segments)) if segments else None


def _s3_problem(uri: str) -> str | None:
    bucket = uri[len("s3://") :].split("/", 1)[0]
    if ".." in bucket or not re.fullmatch(BUCKET, bucket):
        return f"bucket name {bucket!r} is not a valid S3 bucket name (lowercase letters, digits, '.', '-')"
    if not _S3.fullmatch(uri):
        return f"an s3:// key may hold only the characters {PLAIN} (no '%' escapes, spaces or non-ASCII)"
    return None


def _file_problem(uri: str) -> str | None:
    if not uri.startswith("file:///"):
        return "a file:// URI needs an absolute path and no host (file:///path)"
    if not _FILE.fullmatch(uri):
        return _file_spelling(uri)
    for segment in uri[len("file:///") :].rstrip("/").split("/"):
        try:
            decoded = unquote_to_bytes(segment).decode("utf-8")
        except UnicodeDecodeError:
            return f"segment {segment!r} does not decode to UTF-8"
        if len(decoded.encode("utf-8")) > MAX_SEGMENT_BYTES:
            return f"segment {segment[:40]!r}… is longer than {MAX_SEGMENT_BYTES} bytes"
    return None


def _file_spelling(uri: str) -> str:
    hint = suggestion(uri)
    if hint is not None and hint != uri.rstrip("/"):
        return f"it is not in canonical form; write {hint}"
    return (
        "a file:// path may hold only the characters "
        f"{PLAIN} and uppercase %XX escapes of the other bytes (never of '/', '.', or a letter)"
    )


def _show(uri: str) -> str:
    return repr(uri[:120] + ("…" if len(uri) > 120 else ""))
