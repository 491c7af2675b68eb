"""Write the records of a container as bytes while lxml's parser reports it, holding nothing else.

:class:`RecordWriter` is an lxml parser target: libxml2 calls ``start``, ``end``, ``data``,
``comment`` and ``pi`` with Python strings, builds no tree and hands out no element object. Outside
a record the writer keeps only the namespace declarations of the open elements; inside one it
writes the record's markup into a buffer, checking its size as it grows. Output follows lxml's
serialization of the same element (``etree.tostring(record, encoding="UTF-8")``): every namespace
in scope is declared on the record's root, entities are expanded, text and attribute values are
escaped alike, an empty element is written ``<a/>``.

Prefixes: the parser reports names as ``{uri}local``, so a name gets the innermost prefix bound to
its namespace (a namespace bound to two prefixes at once may come back under the other one, the
same name for every XML and XQuery reader).
"""

from __future__ import annotations

from collections.abc import Iterator

XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"

_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTRIBUTE_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
)

Scope = dict[str, str]  # prefix ("" for the default namespace) -> namespace URI

_NO_DECLARATIONS: Scope = {}  # shared, never written to

#: Markup characters gathered before they are encoded and the record's size is checked again.
_FLUSH_CHARS = 1 << 16


class RecordWriter:
    """The parser target that cuts records.

    Args:
        record_element: ``name`` or ``prefix:name`` (see :class:`~feedrouter.delivery.Splitter`).
        max_bytes: a record whose bytes pass this is dropped while it is read and reported as None.
    """

    def __init__(self, record_element: str, max_bytes: int) -> None:
        self._prefix, _, self._local = record_element.rpartition(":")
        self._max_bytes = max_bytes
        self._scopes: list[Scope | None] = []  # one per open element: its declarations, None if none
        self._declared: Scope = {}  # the declarations of the element about to start (start_ns)
        self._names: list[str] = []  # the qualified names of the open elements of the record
        self._qualified_memo: dict[tuple[str, bool], str] = {}  # valid while no binding changes
        self._buffer = bytearray()  # the record's bytes so far
        self._pieces: list[str] = []  # and its latest markup, not yet encoded
        self._piece_chars = 0
        self._depth = 0  # elements open in the current record; 0: outside every record
        self._oversized = False
        self._tag_open = False  # the last start tag still lacks its '>' (it may become '/>')
        self._finished: list[bytes | None] = []
        self.progress = 0  # callbacks so far: the parser is moving through the input

    # -- what the cutter asks --------------------------------------------------------------------

    def take(self) -> Iterator[bytes | None]:
        """The records finished since the last call, in order: their bytes, or None (too large)."""
        finished, self._finished = self._finished, []
        yield from finished

    # -- parser target callbacks -----------------------------------------------------------------

    def start_ns(self, prefix: str | None, uri: str) -> None:
        """A declaration of the element that starts next (lxml calls this before its start)."""
        self._declared[prefix or ""] = uri

    def end_ns(self, prefix: str | None) -> None:
        """A declaration going out of scope: its element's :meth:`end` pops it."""

    def start(self, tag: str, attrib: dict[str, str], nsmap: Scope | None = None) -> None:
        self.progress += 1
        # the element's declarations as start_ns reported them: lxml 6.2 passes an empty nsmap
        # to a target without start_ns, and earlier versions pass what start_ns reports
        declarations = self._declared or (dict(nsmap) if nsmap else None)
        self._declared = {}
        if declarations:
            self._qualified_memo.clear()
        self._scopes.append(declarations)
        if self._depth:
            self._depth += 1
            self._write_start(tag, attrib, declarations or _NO_DECLARATIONS)
        elif self._is_record(tag):
            self._depth = 1
            self._oversized = False
            self._write_start(tag, attrib, self._in_scope())

    def end(self, tag: str) -> None:
        self.progress += 1
        if self._depth:
            self._write_end()
            self._depth -= 1
            if not self._depth:
                self._finish()
        if self._scopes.pop():
            self._qualified_memo.clear()

    def data(self, text: str) -> None:
        self.progress += 1
        if self._depth and not self._oversized:
            self._write(
                ">" + text.translate(_TEXT_ESCAPES) if self._tag_open else text.translate(_TEXT_ESCAPES)
            )
            self._tag_open = False

    def comment(self, text: str) -> None:
        self.progress += 1
        if self._depth:
            self._close_tag()
            self._write(f"<!--{text}-->")

    def pi(self, target: str, data: str | None = None) -> None:
        self.progress += 1
        if self._depth:
            self._close_tag()
            self._write(f"<?{target} {data}?>" if data else f"<?{target}?>")

    def close(self) -> None:
        return None

    # -- records ---------------------------------------------------------------------------------

    def _is_record(self, tag: str) -> bool:
        uri, local = _split(tag)
        if local != self._local:
            return False
        return not self._prefix or uri == self._lookup_uri(self._prefix)

    def _finish(self) -> None:
        self._flush()
        self._finished.append(None if self._oversized else bytes(self._buffer))
        self._buffer = bytearray()

    def _write(self, text: str) -> None:
        if self._oversized:
            return
        self._pieces.append(text)
        self._piece_chars += len(text)
        if self._piece_chars > _FLUSH_CHARS:
            self._flush()

    def _flush(self) -> None:
        """Encode the pending markup and check the record's size (a character is at least a byte,
        so pending markup never hides more than one flush's worth past the limit)."""
        if self._pieces:
            self._buffer += "".join(self._pieces).encode("utf-8")
            self._pieces.clear()
            self._piece_chars = 0
        if len(self._buffer) > self._max_bytes:
            self._oversized = True
            self._buffer = bytearray()

    def _write_start(self, tag: str, attrib: dict[str, str], declarations: Scope) -> None:
        if self._oversized:  # the record is being skipped: only its end matters now
            self._names.append("")
            return
        self._close_tag()
        extra: Scope = {}  # prefixes made up for names whose namespace nothing declared
        name = self._qualified(tag, extra, element=True)
        self._names.append(name)
        if not declarations and not attrib:
            self._write("<" + name if not extra else self._start_tag(name, {}, extra))
        else:
            attributes = {self._qualified(key, extra, element=False): v for key, v in attrib.items()}
            self._write(self._start_tag(name, attributes, {**declarations, **extra}))
        self._tag_open = True

    @staticmethod
    def _start_tag(name: str, attributes: dict[str, str], declarations: Scope) -> str:
        parts = ["<", name]
        for prefix, uri in declarations.items():
            attribute = f"xmlns:{prefix}" if prefix else "xmlns"
            parts.append(f' {attribute}="{uri.translate(_ATTRIBUTE_ESCAPES)}"')
        for key, value in attributes.items():
            parts.append(f' {key}="{value.translate(_ATTRIBUTE_ESCAPES)}"')
        return "".join(parts)

    def _write_end(self) -> None:
        name = self._names.pop()
        if self._tag_open:
            self._tag_open = False
            self._write("/>")
        else:
            self._write(f"</{name}>")

    def _close_tag(self) -> None:
        if self._tag_open:
            self._tag_open = False
            self._write(">")

    # -- namespaces ------------------------------------------------------------------------------

    def _in_scope(self) -> Scope:
        """Every binding in scope at the open element (a record's root declares them all)."""
        scope: Scope = {}
        for declarations in self._scopes:
            if declarations:
                scope.update(declarations)
        return scope

    def _lookup_uri(self, prefix: str) -> str | None:
        for declarations in reversed(self._scopes):
            if declarations and prefix in declarations:
                return declarations[prefix]
        return None

    def _qualified(self, name: str, extra: Scope, element: bool) -> str:
        """``prefix:local`` for a ``{uri}local`` name; a made-up prefix goes into ``extra`` and
        into the open element's scope when no prefix is bound to the namespace."""
        if name[:1] != "{":
            return name
        known = self._qualified_memo.get((name, element))
        if known is not None:
            return known
        uri, local = _split(name)
        if uri == XML_NAMESPACE:
            return f"xml:{local}"
        prefix = self._prefix_of(uri, element)
        if prefix is None:  # not expected from a namespace-well-formed parse, kept correct anyway
            prefix = f"ns{len(self._scopes)}_{len(extra)}"
            extra[prefix] = uri
            self._scopes[-1] = {**(self._scopes[-1] or {}), prefix: uri}
            self._qualified_memo.clear()
            return f"{prefix}:{local}"
        qualified = self._qualified_memo[(name, element)] = f"{prefix}:{local}" if prefix else local
        return qualified

    def _prefix_of(self, uri: str, element: bool) -> str | None:
        """The innermost prefix bound to ``uri`` and not rebound further in ("" for the default
        namespace, which attributes cannot use)."""
        shadowed: set[str] = set()
        for declarations in reversed(self._scopes):
            if not declarations:
                continue
            for prefix, bound in declarations.items():
                if bound == uri and prefix not in shadowed and (prefix or element):
                    return prefix
            shadowed.update(declarations)
        return None


def _split(name: str) -> tuple[str, str]:
    if name[:1] != "{":
        return "", name
    uri, _, local = name[1:].partition("}")
    return uri, local
