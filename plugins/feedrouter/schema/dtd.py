"""The element graph of a DTD: which elements may contain which, and what they carry.

Built with lxml's DTD API (``etree.DTD``) and then copied into plain data (dicts of frozensets and
frozen dataclasses), so a :class:`DtdGraph` pickles cleanly for Spark and never holds lxml objects.

It answers what schema-driven cleaning (paper 003, section 3) and the duplicate/order claims of
paper 000 need: possible children, attributes and text of an element, reachability, loops
(recursion), and the finite set of element chains that a ``//`` step may stand for.

DTD texts come from the catalog, where whoever edits a feed writes them: they are read with no file
or network access at all (:func:`load_dtd`). A DTD that refers to an external parameter entity is
refused (FR303) without anything being fetched, so it can neither read a file nor tell whether one
exists.

Namespaced names are kept exactly as the DTD writes them (``prefix:local``), in content models too; a
DTD knows no namespace URIs, except the ones it fixes with ``xmlns:prefix`` attributes (see
:meth:`DtdGraph.namespaces`). :meth:`DtdGraph.element_tag` and :meth:`DtdGraph.declared_name` tell
which tag (namespace and local name) a declared element has in every valid document, where the DTD
fixes it.

Example:
    >>> graph = DtdGraph.from_text("<!ELEMENT r (a+)> <!ELEMENT a (b*)> <!ELEMENT b (#PCDATA|a)*>")
    >>> graph.root, sorted(graph.children("a")), graph.on_loop("b"), graph.child_chains("r", "b")
    ('r', ['b'], True, None)
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from lxml import etree

from feedrouter.errors import CompileError, Span

Occur = Literal["once", "opt", "mult", "plus"]
ParticleKind = Literal["name", "seq", "or", "pcdata"]
ContentKind = Literal["empty", "any", "mixed", "element"]

#: lxml spells ``+`` as "plus", ``*`` as "mult", ``?`` as "opt".
OCCUR_SUFFIX: dict[str, str] = {"once": "", "opt": "?", "mult": "*", "plus": "+"}


@dataclass(frozen=True)
class Particle:
    """One node of a content model: an element name, ``#PCDATA``, a sequence or a choice."""

    kind: ParticleKind
    occur: Occur = "once"
    name: str | None = None
    items: tuple[Particle, ...] = ()

    def __str__(self) -> str:
        if self.kind == "name":
            body = str(self.name)
        elif self.kind == "pcdata":
            body = "#PCDATA"
        else:
            sep = ", " if self.kind == "seq" else " | "
            body = "(" + sep.join(str(item) for item in self.items) + ")"
        return body + OCCUR_SUFFIX[self.occur]


@dataclass(frozen=True)
class AttributeDecl:
    """One declared attribute. ``type`` and ``default`` use lxml's lower-case spellings.

    ``type`` is e.g. "cdata", "id", "idref", "nmtoken", "enumeration"; ``default`` is one of
    "required", "implied", "fixed" or "none" (a plain default value).
    """

    name: str
    type: str
    default: str
    default_value: str | None = None
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class ElementDecl:
    """One declared element: its content kind, content model (None for EMPTY/ANY) and attributes."""

    name: str
    kind: ContentKind
    model: Particle | None
    attributes: tuple[AttributeDecl, ...] = ()

    @property
    def text_only(self) -> bool:
        """True for ``(#PCDATA)``: the element holds text and never a child element."""
        return self.kind == "mixed" and (self.model is None or self.model.kind == "pcdata")


@dataclass(frozen=True)
class EntityDecl:
    """An internal general entity: ``orig`` is the literal as written, ``content`` its expansion."""

    name: str
    orig: str
    content: str


@dataclass(frozen=True)
class DtdGraph:
    """The element graph of one DTD (plain, picklable data). Build it with :meth:`from_text`.

    Attributes:
        text: the DTD text as given (decoded as UTF-8 when given as bytes).
        root: the document element.
        source: the name used in error messages, if any.
        declarations: element name -> its declaration (content model and attributes).
        child_map: element name -> the declared elements that may be its children.
        entities: the internal general entities (parameter and external entities left out).
        reach: element name -> its proper descendants (precomputed transitive closure).

    Graphs compare by value and hash by their text and root, so they can key caches.
    """

    text: str = field(repr=False)
    root: str
    source: str | None
    declarations: dict[str, ElementDecl] = field(repr=False)
    child_map: dict[str, frozenset[str]] = field(repr=False)
    entities: tuple[EntityDecl, ...] = field(default=(), repr=False)
    reach: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------------------- construction

    @classmethod
    def from_text(cls, text: str | bytes, root: str | None = None, source: str | None = None) -> DtdGraph:
        """Read a DTD (external-subset syntax) and build its graph.

        Args:
            text: the DTD text.
            root: the document element; inferred when None as the one declared element that no
                other element's content model contains.
            source: a name for the DTD used in error messages (a file name, a catalog key).

        Raises:
            CompileError: [FR303] when lxml rejects the DTD, it declares no element, or the root is
                unknown or cannot be inferred unambiguously.
        """
        raw = text.encode("utf-8") if isinstance(text, str) else text
        name = source
        dtd = _parse(raw, name)
        elements = list(dtd.elements())  # type: ignore[attr-defined]  # lxml-stubs 0.5 lacks DTD.elements()
        names = _ModelNames(_written_models(raw), _names_by_local(elements), name)
        decls = {decl.name: decl for decl in (_element_decl(el, names) for el in elements)}
        if not decls:
            raise _error(name, "it declares no element")
        child_map = {n: _children_of(decl, decls) for n, decl in decls.items()}
        general = _general_entity_names(raw.decode("utf-8", errors="replace"))
        entities = tuple(_entity_decls(dtd, general))
        chosen = _choose_root(decls, child_map, root, name)
        str_text = text if isinstance(text, str) else raw.decode("utf-8", errors="replace")
        return cls(str_text, chosen, source, decls, child_map, entities, _closure(child_map))

    def __hash__(self) -> int:
        return hash((self.text, self.root))

    # ----------------------------------------------------------------------------- element facts

    @cached_property
    def element_names(self) -> frozenset[str]:
        """Every declared element name."""
        return frozenset(self.declarations)

    def declaration(self, name: str) -> ElementDecl:
        """The declaration of ``name``; KeyError names the element when it is not declared."""
        try:
            return self.declarations[name]
        except KeyError:
            raise KeyError(f"element {name!r} is not declared in {self.source or 'the DTD'}") from None

    def children(self, name: str) -> frozenset[str]:
        """Declared elements that may appear as children of ``name`` (ANY: every declared element)."""
        return self.child_map[self.declaration(name).name]

    def parents(self, name: str) -> frozenset[str]:
        """Declared elements that may contain ``name`` as a child."""
        return frozenset(p for p, kids in self.child_map.items() if name in kids)

    def attributes(self, name: str) -> frozenset[str]:
        """Names of the attributes declared for ``name`` (``xmlns:*`` declarations included)."""
        return frozenset(a.name for a in self.declaration(name).attributes)

    def attribute(self, element: str, attr: str) -> AttributeDecl | None:
        """The declaration of one attribute, or None when ``element`` does not declare it."""
        return next((a for a in self.declaration(element).attributes if a.name == attr), None)

    def has_text(self, name: str) -> bool:
        """True when ``name`` may hold character data (``#PCDATA``, mixed content or ANY)."""
        return self.declaration(name).kind in ("mixed", "any")

    def text_only(self, name: str) -> bool:
        """True when ``name`` holds text and no child element (``(#PCDATA)``)."""
        return self.declaration(name).text_only

    # ----------------------------------------------------------------------------- reachability

    def reachable(self, name: str) -> frozenset[str]:
        """Proper descendants: elements that may occur anywhere below ``name``."""
        self.declaration(name)
        return self.reach[name]

    def on_loop(self, name: str) -> bool:
        """True when ``name`` may occur below itself (it is recursive)."""
        return name in self.reachable(name)

    def same_loop(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` lie on a common cycle of the element graph."""
        if a == b:
            return self.on_loop(a)
        return b in self.reachable(a) and a in self.reachable(b)

    @cached_property
    def is_recursive(self) -> bool:
        """True when some element may occur below itself (documents have unbounded depth)."""
        return any(self.on_loop(n) for n in self.declarations)

    @cached_property
    def recursive_elements(self) -> frozenset[str]:
        """Every element on a loop."""
        return frozenset(n for n in self.declarations if self.on_loop(n))

    def descendants_from(self, context: str | None) -> frozenset[str]:
        """Elements a ``//`` step from ``context`` may select; None stands for the document node."""
        if context is None:
            return self.reachable(self.root) | {self.root}
        return self.reachable(context)

    def distances(self, context: str | None) -> dict[str, int]:
        """Shortest number of child steps from ``context`` (None: the document node) to each element."""
        start = {self.root} if context is None else self.children(context)
        seen = {n: 1 for n in start}
        queue = deque(start)
        while queue:
            current = queue.popleft()
            for child in self.child_map[current]:
                if child not in seen:
                    seen[child] = seen[current] + 1
                    queue.append(child)
        return seen

    def child_chains(
        self, a: str | None, b: str, max_len: int | None = None
    ) -> frozenset[tuple[str, ...]] | None:
        """The element chains a ``a//b`` step may stand for, as child steps (paper 003, section 3).

        Each chain lists the elements below ``a`` down to ``b`` inclusive, so ``a//b`` selects exactly
        what the union of ``a/c1/.../b`` selects. ``a`` None stands for the document node.

        Returns:
            The set of chains (empty when ``b`` cannot occur below ``a``), or None when the set is
            infinite (a loop lies between ``a`` and ``b``) and ``max_len`` does not bound it. With
            ``max_len`` only chains of at most that many steps are listed and the result is finite.
        """
        key = (a, b, max_len)
        if key not in self._chains:
            self._chains[key] = self._find_child_chains(a, b, max_len)
        return self._chains[key]

    @cached_property
    def _chains(self) -> dict[tuple[str | None, str, int | None], frozenset[tuple[str, ...]] | None]:
        """Answers of :meth:`child_chains`: compiling a population asks the same few again and again."""
        return {}

    def _find_child_chains(
        self, a: str | None, b: str, max_len: int | None
    ) -> frozenset[tuple[str, ...]] | None:
        start = {self.root} if a is None else self.children(a)
        if max_len is None and self._loop_between(start, b):
            return None
        limit = max_len if max_len is not None else len(self.declarations)
        chains: set[tuple[str, ...]] = set()
        stack: list[tuple[str, ...]] = [(s,) for s in start if s == b or b in self.reach[s]]
        while stack:
            chain = stack.pop()
            if chain[-1] == b:
                chains.add(chain)
            if len(chain) < limit:
                stack.extend((*chain, c) for c in self.child_map[chain[-1]] if c == b or b in self.reach[c])
        return frozenset(chains)

    def _loop_between(self, start: Set[str], b: str) -> bool:
        """True when some element on a path from ``start`` to ``b`` is on a loop."""
        between = {s for s in start if s == b or b in self.reach[s]}
        between |= {n for s in between for n in self.reach[s] if n == b or b in self.reach[n]}
        return any(n in self.reach[n] for n in between)

    # ----------------------------------------------------------------------------- element tags

    def element_tag(self, name: str) -> str | None:
        """The tag (``{uri}local``, or ``local`` in no namespace) of every ``name`` element of a valid
        document; None when valid documents may put it in different namespaces."""
        return self._tags[self.declaration(name).name]

    def declared_name(self, tag: str) -> str | None:
        """The declaration every element with ``tag`` in a valid document matches; None when no
        declared element or several may have that tag (``*`` included)."""
        uri, local = _split_tag(tag)
        found = [name for name in self._by_local.get(local, ()) if self._may_have(name, uri)]
        return found[0] if len(found) == 1 else None

    def _may_have(self, name: str, uri: str) -> bool:
        """Whether a ``name`` element of a valid document may be in namespace ``uri``."""
        tag = self._tags[name]
        if tag is not None:
            return _split_tag(tag)[0] == uri
        return ":" not in name or uri != ""  # a prefixed element is never in no namespace

    @cached_property
    def _tags(self) -> dict[str, str | None]:
        bindings = _fixed_bindings(self.declarations.values())
        return {name: _tag(name, bindings) for name in self.declarations}

    @cached_property
    def _by_local(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        for name in self.declarations:
            found.setdefault(name.rpartition(":")[2], []).append(name)
        return {local: tuple(names) for local, names in found.items()}

    # ----------------------------------------------------------------------------- entities, namespaces

    def entity_declarations(self) -> str:
        """The internal general entities as DTD text, e.g. for a document's internal subset."""
        return "\n".join(_entity_text(e) for e in self.entities)

    def namespaces(self) -> dict[str, str]:
        """Prefix -> URI from ``xmlns:prefix`` attributes the DTD fixes (``#FIXED`` or a default).

        The key "" holds the default element namespace when an ``xmlns`` attribute fixes one.
        """
        found: dict[str, str] = {}
        for decl in self.declarations.values():
            for attr in decl.attributes:
                if (attr.name == "xmlns" or attr.name.startswith("xmlns:")) and attr.default_value:
                    found.setdefault(attr.name[6:], attr.default_value)
        return found


# --------------------------------------------------------------------------------------- helpers


def _error(source: str | None, problem: str, span: Span | None = None) -> CompileError:
    # The error renders as "<source>, [FR303] invalid DTD: <problem>" when the DTD has a name.
    return CompileError(f"invalid DTD: {problem}", code="FR303", source=source, span=span)


#: The system id under which a DTD text is handed to libxml2; nothing by this name is ever fetched.
_DTD_ID = "urn:feedrouter:feed-dtd"
_HOST = f'<!DOCTYPE feedrouter-dtd-host SYSTEM "{_DTD_ID}"><feedrouter-dtd-host/>'.encode()


class _OnlyThisDtd(etree.Resolver):
    """Answers the request for the DTD with its text and every other request with nothing.

    libxml2 asks its resolvers before it opens anything, so an external parameter entity (a file
    path, ``file:``, ``http:``, a catalog's public id) reaches no file and no network; the ids it
    asked for are kept so that the DTD can be refused for them.
    """

    def __init__(self, raw: bytes) -> None:
        super().__init__()
        self._raw = raw
        self.served = False
        self.refused: list[str] = []

    # Unannotated: lxml-stubs 0.5 gives Resolver.resolve no context argument and resolve_string a
    # required base_url, neither of which lxml has.
    def resolve(self, system_url, public_id, context):
        if system_url == _DTD_ID and not self.served:
            self.served = True
            return self.resolve_string(self._raw, context)
        self.refused.append(str(system_url or public_id))
        return self.resolve_string(b"", context)


def _resolving_parser(resolver: _OnlyThisDtd) -> etree.XMLParser:
    parser = etree.XMLParser(load_dtd=True, no_network=True, resolve_entities=False, huge_tree=False)
    parser.resolvers.add(resolver)
    return parser


def load_dtd(raw: bytes, source: str | None = None) -> etree.DTD:
    """Parse DTD text (external-subset syntax) into lxml's DTD object, touching no file or network.

    Raises:
        CompileError: [FR303] when the text is not a DTD, or it refers to an external entity.
    """
    resolver = _OnlyThisDtd(raw)
    parser = _resolving_parser(resolver)
    try:
        host = etree.fromstring(_HOST, parser)
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(exc, parser.error_log, source) from None
    if resolver.refused:
        refused = ", ".join(sorted(set(resolver.refused)))
        raise _error(source, f"it refers to external entities ({refused}); a feed DTD must be self-contained")
    dtd = host.getroottree().docinfo.externalDTD
    if not resolver.served or dtd is None:
        raise _error(source, "it could not be read as a DTD")
    return dtd


def _syntax_error(exc: etree.XMLSyntaxError, log: etree._ListErrorLog, source: str | None) -> CompileError:
    # the parser's own log: the exception's may hold earlier parses' entries too
    entries = [e for e in log if e.level_name in ("ERROR", "FATAL")] or list(log)
    detail = "; ".join(f"line {e.line}, column {e.column}: {e.message}" for e in entries)
    span = Span(entries[0].line, entries[0].column) if entries else None
    return _error(source, detail or str(exc), span)


def _parse(raw: bytes, source: str | None) -> etree.DTD:
    return load_dtd(raw, source)


def _qualified(prefix: str | None, name: str) -> str:
    return f"{prefix}:{name}" if prefix else name


def _names_by_local(elements: list[etree._DTDElementDecl]) -> dict[str, list[str]]:
    """Local name -> declared qualified names."""
    found: dict[str, list[str]] = {}
    for el in elements:
        found.setdefault(el.name, []).append(_qualified(el.prefix, el.name))
    return found


#: The DTD read as an external parameter entity of an internal subset, which libxml2 serializes whole.
_SUBSET_HOST = (
    f'<!DOCTYPE feedrouter-dtd-host [<!ENTITY % feed SYSTEM "{_DTD_ID}"> %feed;]><feedrouter-dtd-host/>'
).encode()
# Comments and processing instructions first, so that a declaration written inside one is skipped;
# quoted literals (attribute defaults, entity values) may hold '>'.
_DECLARATION = re.compile(
    r"<!--.*?-->|<\?.*?\?>|<!ELEMENT\s+(?P<name>[^\s>]+)\s+(?P<model>[^>]*)>"
    r"|<!(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
    re.S,
)
_MODEL_TOKEN = re.compile(r"[^\s()|,?*+]+")


def _written_models(raw: bytes) -> dict[str, tuple[str, ...]] | None:
    """Element name -> the element names its content model uses, in order, prefixes included.

    lxml's content-model nodes carry local names only, and with both ``title`` and ``dc:title``
    declared a guess picks the wrong one for some valid documents. libxml2 keeps the prefixes and
    writes them when it serializes a DTD, which it does for an internal subset only: so the DTD is read
    again as an external parameter entity of one (parameter entities expanded, nothing fetched).
    None when that fails.
    """
    resolver = _OnlyThisDtd(raw)
    try:
        host = etree.fromstring(_SUBSET_HOST, _resolving_parser(resolver))
    except etree.XMLSyntaxError:
        return None
    if resolver.refused or not resolver.served:
        return None
    text = etree.tostring(host.getroottree(), encoding="unicode")
    subset = text[text.index("[") + 1 :]  # past the host's own DOCTYPE opening
    found: dict[str, tuple[str, ...]] = {}
    for match in _DECLARATION.finditer(subset):
        if match["name"] is not None:
            tokens = _MODEL_TOKEN.findall(match["model"])
            found.setdefault(match["name"], tuple(t for t in tokens if t != "#PCDATA"))
    return found


@dataclass(frozen=True)
class _ModelNames:
    """The qualified names a content model uses: as libxml2 writes them, or else inferred."""

    written: dict[str, tuple[str, ...]] | None
    by_local: dict[str, list[str]]
    source: str | None

    def of(self, element: str, content: etree._DTDElementContentDecl) -> Iterator[str]:
        """The names of ``element``'s content model, in the order :func:`_particle` visits them."""
        local = _local_names(content)
        written = self.written.get(element) if self.written is not None else None
        if written is not None and [n.rpartition(":")[2] for n in written] == local:
            return iter(written)
        return iter([self._inferred(element, name) for name in local])

    def _inferred(self, element: str, local: str) -> str:
        # One declaration with this local name: any other name used is undeclared, so no valid
        # document has it, and taking this one only adds a child that never occurs.
        candidates = self.by_local.get(local, [local])
        if len(candidates) > 1:
            found = ", ".join(sorted(candidates))
            raise _error(self.source, f"cannot tell which of {found} the content model of {element} uses")
        return candidates[0]


def _local_names(node: etree._DTDElementContentDecl | None) -> list[str]:
    if node is None:
        return []
    if node.type == "element":
        return [node.name]
    return _local_names(node.left) + _local_names(node.right)


def _element_decl(el: etree._DTDElementDecl, names: _ModelNames) -> ElementDecl:
    kind: ContentKind = el.type if el.type in ("empty", "any", "mixed") else "element"
    qualified = _qualified(el.prefix, el.name)
    model = _particle(el.content, names.of(qualified, el.content)) if el.content is not None else None
    attrs = tuple(_attribute_decl(a) for a in el.attributes())
    return ElementDecl(qualified, kind, model, attrs)


def _attribute_decl(attr: etree._DTDAttributeDecl) -> AttributeDecl:
    values = tuple(attr.values()) if attr.type in ("enumeration", "notation") else ()
    return AttributeDecl(
        _qualified(attr.prefix, attr.name), attr.type, attr.default, attr.default_value, values
    )


def _particle(node: etree._DTDElementContentDecl, names: Iterator[str]) -> Particle:
    """Copy lxml's binary content tree, flattening the nested once-groups lxml uses for lists.

    ``names`` gives the qualified element names in the order of the tree's leaves, left to right
    (lxml gives only their local names).
    """
    occur: Occur = node.occur
    if node.type == "element":
        return Particle("name", occur, next(names))
    if node.type == "pcdata":
        return Particle("pcdata", occur)
    items = tuple(_flatten(node.type, node.left, names) + _flatten(node.type, node.right, names))
    return Particle("seq" if node.type == "seq" else "or", occur, None, items)


def _flatten(kind: str, node: etree._DTDElementContentDecl | None, names: Iterator[str]) -> list[Particle]:
    # lxml nests (a, b, c) as seq(a, seq(b, c)); a once-group of the same kind adds nothing.
    if node is None:
        return []
    if node.type == kind and node.occur == "once":
        return _flatten(kind, node.left, names) + _flatten(kind, node.right, names)
    return [_particle(node, names)]


def _names_in(particle: Particle | None) -> set[str]:
    if particle is None:
        return set()
    if particle.kind == "name":
        return {str(particle.name)}
    return {n for item in particle.items for n in _names_in(item)}


def _children_of(decl: ElementDecl, decls: dict[str, ElementDecl]) -> frozenset[str]:
    # Names used in a model but never declared cannot occur in a valid document: leave them out.
    if decl.kind == "any":
        return frozenset(decls)
    return frozenset(n for n in _names_in(decl.model) if n in decls)


def _split_tag(tag: str) -> tuple[str, str]:
    """``{uri}local`` -> (uri, local); a tag in no namespace has the URI ""."""
    if tag.startswith("{"):
        uri, _, local = tag[1:].partition("}")
        return uri, local
    return "", tag


def _tag(name: str, bindings: dict[str, str | None]) -> str | None:
    prefix, _, local = name.rpartition(":")
    uri = bindings.get(prefix)
    if uri is None:
        return None
    return f"{{{uri}}}{local}" if uri else local


def _fixed_bindings(decls: Iterable[ElementDecl]) -> dict[str, str | None]:
    """Prefix ("" the default namespace) -> the URI it has wherever valid documents use it; None when
    it may have several. Documents are validated with their namespace declarations as attributes, so
    only the ``xmlns`` attributes the DTD declares can bind a prefix."""
    declared: dict[str, list[AttributeDecl]] = {}
    for decl in decls:
        for attr in decl.attributes:
            if attr.name == "xmlns" or attr.name.startswith("xmlns:"):
                declared.setdefault(attr.name[6:], []).append(attr)
    bindings = {prefix: _fixed_uri(prefix, attrs) for prefix, attrs in declared.items()}
    bindings.setdefault("", "")  # no element may declare a default namespace: it is none
    return bindings


def _fixed_uri(prefix: str, attrs: list[AttributeDecl]) -> str | None:
    # Only a CDATA #FIXED value is the URI: a default may be overridden, and validation compares other
    # types after normalizing spaces the namespace URI keeps.
    if any(a.type != "cdata" or a.default != "fixed" for a in attrs):
        return None
    values = {a.default_value or "" for a in attrs}
    if len(values) != 1:
        return None
    (uri,) = values
    if prefix == "":
        # a fixed attribute may be left out, leaving the element in no namespace
        return "" if not uri else None
    return uri or None


def _closure(child_map: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    reach: dict[str, frozenset[str]] = {}
    for start in child_map:
        seen: set[str] = set()
        stack = list(child_map[start])
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(child_map[node])
        reach[start] = frozenset(seen)
    return reach


def _choose_root(
    decls: dict[str, ElementDecl], child_map: dict[str, frozenset[str]], root: str | None, source: str | None
) -> str:
    if root is not None:
        if root not in decls:
            raise _error(source, f"root element {root!r} is not declared")
        return root
    # ANY contains everything, so it says nothing about which element is the document element.
    contained = {c for p, kids in child_map.items() if decls[p].kind != "any" for c in kids if c != p}
    candidates = sorted(n for n in decls if n not in contained)
    if len(candidates) == 1:
        return candidates[0]
    found = ", ".join(candidates) if candidates else "none (every element is contained by another)"
    raise _error(source, f"cannot infer the root element; candidates: {found}; pass root=")


_COMMENT = re.compile(r"<!--.*?-->", re.S)
_GENERAL_ENTITY = re.compile(r"<!ENTITY\s+([^\s%]+)\s")


def _general_entity_names(text: str) -> set[str]:
    # lxml lists parameter and general entities alike; only the declaration's '%' tells them apart.
    return set(_GENERAL_ENTITY.findall(_COMMENT.sub("", text)))


def _entity_decls(dtd: etree.DTD, general: set[str]) -> list[EntityDecl]:
    found: dict[str, EntityDecl] = {}
    for ent in dtd.entities():  # type: ignore[attr-defined]  # lxml-stubs 0.5 lacks DTD.entities()
        if ent.name in general and ent.content is not None and ent.system_url is None:
            found.setdefault(ent.name, EntityDecl(ent.name, ent.orig or "", ent.content))
    return list(found.values())


def _entity_text(entity: EntityDecl) -> str:
    # '%' would start a parameter-entity reference inside an internal subset; write it as a char ref.
    value = entity.orig.replace("%", "&#37;")
    quote = "'" if '"' in value else '"'
    if quote in value:
        value = value.replace("'", "&#39;")
    return f"<!ENTITY {entity.name} {quote}{value}{quote}>"


def general_entity_declarations(text: str | bytes, source: str | None = None) -> str:
    """The internal general entities a DTD declares, as standalone DTD text.

    Documents get a feed's entities (``&nbsp;``) from this text rather than from the whole DTD: it
    needs no parameter entities, declares no elements (so no attribute defaults are added), and
    names nothing external. Works for DTDs that declare only entities.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else text
    decoded = raw.decode("utf-8", errors="replace")
    entities = _entity_decls(_parse(raw, source), _general_entity_names(decoded))
    return "\n".join(_entity_text(e) for e in entities)
