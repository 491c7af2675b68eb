# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled part of witness rows: an element's plain children by name, read off libxml2's tree.

A witness row wants, for each of a few child names, the children's string values and their
serialized copies. Where those children are *plain* — no namespace anywhere in scope, no attributes,
nothing but text inside — the copy is ``<name>escaped text</name>`` (``<name/>`` when it has no
child node at all) exactly as libxml2 serializes it, and the value is the text: both are read here
in one walk over the children, without a Python object per child. Anything else answers None and the caller takes the
general path (:mod:`feedrouter.join.witness`), which is also this module's oracle in the tests.

Only libxml2's node structs are read (through lxml's public declarations); no libxml2 function is
called, so the module links against nothing but Python.
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.object cimport Py_SIZE
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcpy, strcmp, strlen


cdef extern from "Python.h":
    int PyGC_Enable()  # both give the collector's state before the call
    int PyGC_Disable()

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree

cetree.import_lxml__etree()

import array as _array  # cpython.array's functions need the module imported

#: the most child names one call reads (a witness plan's leaves and fragments name far fewer)
cdef enum:
    MAX_NAMES = 64


cdef bint _namespaces_in_scope(tree.xmlNode* node):
    """Whether a namespace is declared on the node or an ancestor (lxml copies every declaration in
    scope onto a serialized element, so such a copy is not the plain form)."""
    while node is not NULL and node.type == tree.XML_ELEMENT_NODE:
        if node.nsDef is not NULL:
            return True
        node = node.parent
    return False


cdef Py_ssize_t _plain_text_length(tree.xmlNode* element):
    """The length in bytes of a plain element's text (its text nodes' content), or -1 when the
    element is not plain: it has a namespace, an attribute or a child other than text (an element,
    a comment, a CDATA section, an unexpanded entity reference)."""
    if element.ns is not NULL or element.properties is not NULL or element.nsDef is not NULL:
        return -1
    return _text_nodes_length(element.children)


cdef Py_ssize_t _text_nodes_length(tree.xmlNode* child):
    """The length in bytes of a run of sibling text nodes' content, or -1 when one of them is not a
    text node."""
    cdef Py_ssize_t length = 0
    while child is not NULL:
        if child.type != tree.XML_TEXT_NODE:
            return -1
        if child.content is not NULL:
            length += strlen(<const char*>child.content)
        child = child.next
    return length


cdef char* _write(char* out, const char* text, Py_ssize_t length):
    memcpy(out, text, length)
    return out + length


#: per byte, what it is written as (NULL: itself): in text content as libxml2 serializes it (``&``,
#: ``<``, ``>`` and carriage returns escaped), and in an attribute value as the factory writes one
#: (``serialized_attribute``: ``&``, ``<``, ``"`` escaped, tabs, newlines and carriage returns as
#: character references; ``>`` kept)
cdef const char* _IN_TEXT[256]
cdef const char* _IN_ATTRIBUTE[256]


cdef void _fill_escapes() noexcept:
    cdef int i
    for i in range(256):
        _IN_TEXT[i] = NULL
        _IN_ATTRIBUTE[i] = NULL
    _IN_TEXT[ord("&")] = _IN_ATTRIBUTE[ord("&")] = b"&amp;"
    _IN_TEXT[ord("<")] = _IN_ATTRIBUTE[ord("<")] = b"&lt;"
    _IN_TEXT[ord(">")] = b"&gt;"
    _IN_TEXT[ord("\r")] = _IN_ATTRIBUTE[ord("\r")] = b"&#13;"
    _IN_ATTRIBUTE[ord('"')] = b"&quot;"
    _IN_ATTRIBUTE[ord("\t")] = b"&#9;"
    _IN_ATTRIBUTE[ord("\n")] = b"&#10;"


_fill_escapes()


cdef Py_ssize_t _escaped_length(const unsigned char* text, Py_ssize_t length, const char** escapes):
    """The length of ``text`` written with ``escapes``."""
    cdef Py_ssize_t i, size = length
    cdef const char* escape
    for i in range(length):
        escape = escapes[text[i]]
        if escape is not NULL:
            size += <Py_ssize_t>strlen(escape) - 1
    return size


cdef char* _write_escaped(char* out, const unsigned char* text, Py_ssize_t length, const char** escapes):
    """``text`` written with ``escapes``."""
    cdef Py_ssize_t i
    cdef const char* escape
    for i in range(length):
        escape = escapes[text[i]]
        if escape is NULL:
            out[0] = <char>text[i]
            out += 1
        else:
            out = _write(out, escape, strlen(escape))
    return out


cdef bint _declares_attributes(tree.xmlNode* element):
    """Whether the element's document has a DTD, which may give its attributes defaults that are
    not in the tree (``element.get`` answers them; a walk over the written attributes would not)."""
    cdef tree.xmlDoc* doc = element.doc
    return doc is not NULL and (doc.intSubset is not NULL or doc.extSubset is not NULL)


cdef inline bint _is_child(const char* name):
    """Whether a name is a child element's (not ``@name``, an own attribute, nor ``.``, the
    element's own string value)."""
    return name[0] != b'@' and name[0] != b'.'


cdef struct Located:
    # per name: where its occurrences start (a child element, an own attribute's node, or the
    # element itself for ``.``), how many there are, and the first one's text length in bytes
    const char* names[MAX_NAMES]
    tree.xmlNode* first[MAX_NAMES]
    Py_ssize_t count[MAX_NAMES]
    Py_ssize_t length[MAX_NAMES]


cdef bint _locate(element, tuple names, Located* at) except -1:
    """Note where each of ``names`` occurs on the element (:class:`Located`), in one walk over its
    children; False where the kernel declines (see :func:`plain_children`). Raises TypeError for
    anything but an lxml element and bytes names."""
    if not isinstance(element, cetree._Element):
        raise TypeError(f"feedrouter.kernel: not an lxml element: {type(element).__name__}")
    _check_names(names)
    return _locate_node((<cetree._Element>element)._c_node, names, at)


cdef int _check_names(tuple names) except -1:
    for name in names:
        if type(name) is not bytes:
            raise TypeError(f"feedrouter.kernel: a name is not bytes: {type(name).__name__}")
    return 0


cdef bint _locate_node(tree.xmlNode* c_element, tuple names, Located* at) except -1:
    """:func:`_locate` of a node, ``names`` checked to be bytes."""
    cdef tree.xmlNode* child
    cdef tree.xmlAttr* attribute
    cdef Py_ssize_t n = len(names), i, length
    cdef bint walks = False
    if n > MAX_NAMES:
        return False
    if c_element.type != tree.XML_ELEMENT_NODE or _namespaces_in_scope(c_element):
        return False
    for i in range(n):
        at.names[i] = PyBytes_AS_STRING(names[i])
        at.first[i], at.count[i], at.length[i] = NULL, 0, 0
        if at.names[i][0] == b'@':
            if _declares_attributes(c_element):
                return False
            attribute = c_element.properties
            while attribute is not NULL:
                if attribute.ns is NULL and strcmp(<const char*>attribute.name, at.names[i] + 1) == 0:
                    at.length[i] = _text_nodes_length(attribute.children)
                    if at.length[i] < 0:
                        return False
                    at.first[i], at.count[i] = <tree.xmlNode*>attribute, 1
                    break
                attribute = attribute.next
        elif at.names[i][0] == b'.':
            at.length[i] = _text_nodes_length(c_element.children)
            if at.length[i] < 0:  # an element, a comment, a CDATA section inside: the caller's path
                return False
            at.first[i], at.count[i] = c_element, 1
        else:
            walks = True
    child = c_element.children if walks else NULL  # own attributes only: no walk
    while child is not NULL:
        if child.type == tree.XML_ELEMENT_NODE:
            for i in range(n):  # every name that matches (a name given twice gets both)
                if not _is_child(at.names[i]) or strcmp(<const char*>child.name, at.names[i]) != 0:
                    continue
                length = _plain_text_length(child)
                if length < 0:
                    return False
                if at.count[i] == 0:
                    at.first[i], at.length[i] = child, length
                at.count[i] += 1
        child = child.next
    return True


cdef struct Columns:
    # a row's leaves' and fragments' columns (indexes into its names) and the fragments' kinds,
    # read once from the caller's tuples
    Py_ssize_t leaves[MAX_NAMES]
    Py_ssize_t fragments[MAX_NAMES]
    int kinds[MAX_NAMES]


cdef bint _read_columns(Py_ssize_t count, tuple leaves, tuple fragments, tuple kinds, Columns* c) except -1:
    """Read each column and kind once into ``c`` (the walk indexes with them unchecked), refusing
    columns that do not index the names; True when there are more than :data:`MAX_NAMES` leaves or
    fragments (checked, not kept: the caller declines)."""
    cdef Py_ssize_t i, column
    cdef bint too_many = len(leaves) > MAX_NAMES or len(fragments) > MAX_NAMES
    if len(kinds) != len(fragments):
        raise ValueError("plain_row: a kind per fragment")
    for i in range(len(leaves) + len(fragments)):
        column = leaves[i] if i < len(leaves) else fragments[i - len(leaves)]
        if column < 0 or column >= count:
            raise ValueError(f"plain_row: a column is not the index of a name: {column}")
        if too_many:
            continue
        if i < len(leaves):
            c.leaves[i] = column
        else:
            c.fragments[i - len(leaves)] = column
            c.kinds[i - len(leaves)] = 0 if kinds[i - len(leaves)] == 0 else 1
    return too_many


cdef Py_ssize_t _escaped_chain_length(tree.xmlNode* node, const char** escapes):
    """The length of a run of sibling text nodes' content written with ``escapes``."""
    cdef Py_ssize_t size = 0
    while node is not NULL:
        if node.content is not NULL:
            size += _escaped_length(node.content, strlen(<const char*>node.content), escapes)
        node = node.next
    return size


cdef char* _write_escaped_chain(char* out, tree.xmlNode* node, const char** escapes):
    """A run of sibling text nodes' content written with ``escapes``."""
    while node is not NULL:
        if node.content is not NULL:
            out = _write_escaped(out, node.content, strlen(<const char*>node.content), escapes)
        node = node.next
    return out


cdef str _chain_string(tree.xmlNode* node, Py_ssize_t length):
    """A run of sibling text nodes' content (``length`` bytes of UTF-8) as a string, decoded
    straight from the node when there is one (libxml2 merges adjacent text as it parses)."""
    cdef bytes joined
    cdef char* out
    if node is NULL or node.content is NULL and node.next is NULL:
        return ""
    if node.next is NULL:
        return PyUnicode_DecodeUTF8(<const char*>node.content, length, NULL)
    joined = PyBytes_FromStringAndSize(NULL, length)
    out = PyBytes_AS_STRING(joined)
    while node is not NULL:
        if node.content is not NULL:
            out = _write(out, <const char*>node.content, strlen(<const char*>node.content))
        node = node.next
    return PyUnicode_DecodeUTF8(PyBytes_AS_STRING(joined), length, NULL)


cdef tree.xmlNode* _next_named(tree.xmlNode* node, const char* name):
    """The next sibling element of ``node`` named ``name``, or NULL."""
    node = node.next
    while node is not NULL:
        if node.type == tree.XML_ELEMENT_NODE and strcmp(<const char*>node.name, name) == 0:
            return node
        node = node.next
    return NULL


cdef tree.xmlNode* _texts_of(tree.xmlNode* found, const char* name):
    """Where an occurrence's text nodes start: an attribute's or an element's children."""
    if name[0] == b'@':
        return (<tree.xmlAttr*>found).children
    return found.children


cdef tuple _occurrence_strings(tree.xmlNode* first, Py_ssize_t count, Py_ssize_t length, const char* name):
    """A name's values: each occurrence's text as a string (``length``: the first's in bytes)."""
    cdef list strings
    cdef tree.xmlNode* node
    if count == 0:
        return ()
    if count == 1:
        return (_chain_string(_texts_of(first, name), length),)
    strings = [_chain_string(first.children, length)]
    node = _next_named(first, name)
    while node is not NULL:
        strings.append(_chain_string(node.children, _text_nodes_length(node.children)))
        node = _next_named(node, name)
    return tuple(strings)


cdef Py_ssize_t _fragment_length(tree.xmlNode* first, const char* name, int kind):
    """The length in bytes of a fragment of a child name's occurrences from ``first`` on: their
    copies (kind 0) or their values in an attribute, joined by spaces (kind 1)."""
    cdef Py_ssize_t size = 0, n = strlen(name), length
    cdef tree.xmlNode* node = first
    while node is not NULL:
        if kind == 0:
            # libxml2 writes <name/> for an element with no child at all; a child that holds no
            # text (an empty CDATA section parsed into an empty text node) still gets <name></name>
            length = _escaped_chain_length(node.children, _IN_TEXT)
            size += n + 3 if node.children is NULL else 2 * n + 5 + length
        else:
            size += _escaped_chain_length(node.children, _IN_ATTRIBUTE) + (1 if node is not first else 0)
        node = _next_named(node, name)
    return size


cdef bytes _fragment(tree.xmlNode* first, const char* name, int kind, Py_ssize_t size):
    """The fragment :func:`_fragment_length` measured (``size`` bytes)."""
    cdef bytes data
    if first is NULL:
        return b""
    data = PyBytes_FromStringAndSize(NULL, size)
    _write_fragment(PyBytes_AS_STRING(data), first, name, kind)
    return data


cdef char* _write_fragment(char* out, tree.xmlNode* first, const char* name, int kind):
    """Write the fragment :func:`_fragment_length` measured at ``out`` (nothing when ``first`` is
    NULL); where it ends."""
    cdef Py_ssize_t n = strlen(name)
    cdef tree.xmlNode* node = first
    while node is not NULL:
        if kind == 0:
            out = _write(out, b"<", 1)
            out = _write(out, name, n)
            if node.children is NULL:  # as _fragment_length decides
                out = _write(out, b"/>", 2)
            else:
                out = _write(out, b">", 1)
                out = _write_escaped_chain(out, node.children, _IN_TEXT)
                out = _write(out, b"</", 2)
                out = _write(out, name, n)
                out = _write(out, b">", 1)
        else:
            if node is not first:
                out = _write(out, b" ", 1)
            out = _write_escaped_chain(out, node.children, _IN_ATTRIBUTE)
        node = _next_named(node, name)
    return out


def plain_row(element, tuple names, tuple leaves, tuple fragments, tuple kinds, Py_ssize_t limit):
    """A witness row read whole off the element's plain children and own attributes: ``names`` as
    for :func:`plain_children`; ``leaves``, per leaf, the index of its name; ``fragments``, per
    fragment, the index of its (child) name, with ``kinds`` saying how it is written: 0 the
    children's copies, 1 their values joined by spaces in an attribute. Returns ``(values,
    fragments, size)``: the leaves' string values, the fragments' bytes and the row's size (16 for
    its bookkeeping, the values' lengths in characters, the fragments' in bytes). None where
    :func:`plain_children` declines (the caller's path reads the row); False where the row would
    pass ``limit`` bytes, decided before any fragment is made (the caller's path refuses such a
    row too). Columns that do not index ``names``, and fragments of anything but child elements,
    raise ValueError.

    Both read the element in one walk that notes where each name's occurrences start
    (:func:`_locate`); a value is decoded and a fragment written straight from the nodes' text,
    with no object per child in between (a row is read for every item of every message of a feed
    with joins). The tests hold :func:`plain_children` to lxml, and this to it."""
    cdef Located at
    cdef Columns c
    cdef bint too_many = _read_columns(len(names), leaves, fragments, kinds, &c)
    cdef int collecting = PyGC_Disable()  # no collection, so no finalizer, while node pointers are held
    try:
        if too_many or not _locate(element, names, &at):
            return None
        return _row(&at, &c, len(leaves), len(fragments), limit)
    finally:
        if collecting:
            PyGC_Enable()


cdef object _row(Located* at, Columns* c, Py_ssize_t nleaves, Py_ssize_t nfragments, Py_ssize_t limit):
    """:func:`plain_row`'s row from where its names occur."""
    cdef Py_ssize_t lengths[MAX_NAMES]  # each fragment's, in bytes
    cdef Py_ssize_t size = 16, i, column
    cdef object values, data
    cdef tuple strings
    cdef str string
    cdef bytes fragment
    for i in range(nfragments):
        if not _is_child(at.names[c.fragments[i]]):
            raise ValueError("plain_row: a fragment reads child elements, not an attribute or the element")
    values = PyTuple_New(nleaves)
    for i in range(nleaves):
        column = c.leaves[i]
        strings = _occurrence_strings(at.first[column], at.count[column], at.length[column], at.names[column])
        for string in strings:
            size += len(string)
        Py_INCREF(strings)
        PyTuple_SET_ITEM(values, i, strings)
    if size > limit:
        return False
    for i in range(nfragments):
        column = c.fragments[i]
        lengths[i] = _fragment_length(at.first[column], at.names[column], c.kinds[i])
        size += lengths[i]
        if size > limit:
            return False
    data = PyTuple_New(nfragments)
    for i in range(nfragments):
        column = c.fragments[i]
        fragment = _fragment(at.first[column], at.names[column], c.kinds[i], lengths[i])
        Py_INCREF(fragment)
        PyTuple_SET_ITEM(data, i, fragment)
    return values, data, size


def plain_children(element, tuple names, Py_ssize_t limit):
    """For each of ``names`` (UTF-8 local names, no namespace), the element's children of that
    name as ``(string values, serialized copies)``, in document order; for a name ``@name``, the
    value of the element's own attribute of that name as ``((value,) or (), b"")``; for ``.``, the
    element's own string value as ``((value,), b"")`` when it has nothing but text inside.

    None where the caller's path answers instead: a namespace is in scope, one of those children
    is not plain, an own attribute is read from a document with a DTD (it may default the
    attribute), or the copies would pass ``limit`` bytes (that path stops copying where its limit
    falls: nothing is made past it here). ``element`` must be an lxml element and ``names`` bytes;
    anything else raises TypeError.
    """
    cdef Located at
    cdef int collecting = PyGC_Disable()  # as in plain_row
    try:
        if not _locate(element, names, &at):
            return None
        return _columns_of(&at, len(names), limit)
    finally:
        if collecting:
            PyGC_Enable()


cdef object _columns_of(Located* at, Py_ssize_t count, Py_ssize_t limit):
    """:func:`plain_children`'s columns from where its names occur."""
    cdef Py_ssize_t i, total = 0
    cdef Py_ssize_t sizes[MAX_NAMES]
    cdef list result
    for i in range(count):
        sizes[i] = _fragment_length(at.first[i], at.names[i], 0) if _is_child(at.names[i]) else 0
        total += sizes[i]
        if total > limit:
            return None
    result = []
    for i in range(count):
        result.append((
            _occurrence_strings(at.first[i], at.count[i], at.length[i], at.names[i]),
            _fragment(at.first[i], at.names[i], 0, sizes[i]) if _is_child(at.names[i]) else b"",
        ))
    return tuple(result)


def first_named(root, bytes name not None):
    """The first element named ``name`` (a UTF-8 local name, no namespace) in document order in
    ``root``'s subtree, ``root`` included, as ``(its pre-order id among the subtree's elements, the
    element)``; None when there is none. The ids are the router's (``root`` is 0; comments,
    processing instructions and entity references are not elements and are not entered), so a
    feed's event time is read off the parsed tree in one walk, without a path of its own in the
    shared NFA (:meth:`feedrouter.router.Router.add_witness`). ``root`` must be an lxml element and
    ``name`` bytes; anything else raises TypeError."""
    found = _named(root, name, True)
    return found[0] if found else None


def first_named_text(root, bytes name not None):
    """:func:`first_named` with the element's string value where the kernel reads it: ``(its
    pre-order id, the element, its text)`` when the element holds nothing but text (a feed's event
    time, ``<pubDate>...</pubDate>``), ``(id, element, None)`` otherwise (the caller's path reads
    the string value), None when there is no such element. Refusals are :func:`first_named`'s."""
    cdef tree.xmlNode* c_node
    cdef Py_ssize_t length
    found = _named(root, name, True)
    if not found:
        return None
    nid, element = found[0]
    c_node = (<cetree._Element>element)._c_node
    length = _text_nodes_length(c_node.children)
    return nid, element, (_chain_string(c_node.children, length) if length >= 0 else None)


def all_named(root, bytes name not None):
    """Every element named ``name`` (a UTF-8 local name, no namespace) in ``root``'s subtree,
    ``root`` included, in document order, as a list of ``(pre-order id, element)``: the nodes a
    join block bound by ``//name`` binds, found in one walk instead of a path in the shared NFA
    (:meth:`feedrouter.router.Router.add_witness`). The ids and the refusals are
    :func:`first_named`'s."""
    return _named(root, name, False)


cdef list _named(root, bytes name, bint first):
    """The elements of :func:`all_named`, or only the first (:func:`first_named`)."""
    cdef tree.xmlNode* c_root
    cdef tree.xmlNode* node
    cdef const char* c_name = PyBytes_AS_STRING(name)
    cdef Py_ssize_t nid = 0
    cdef list found = []
    if not isinstance(root, cetree._Element):
        raise TypeError(f"feedrouter.kernel: not an lxml element: {type(root).__name__}")
    c_root = (<cetree._Element>root)._c_node
    if c_root is NULL or c_root.type != tree.XML_ELEMENT_NODE:
        raise TypeError("feedrouter.kernel: a search by name walks an element's subtree")
    cdef cetree._Document doc = (<cetree._Element>root)._doc
    node = c_root
    while True:
        if node.type == tree.XML_ELEMENT_NODE:
            if node.ns is NULL and strcmp(<const char*>node.name, c_name) == 0:
                found.append((nid, cetree.elementFactory(doc, node)))
                if first:
                    return found
            nid += 1
            if node.children is not NULL:  # an element's children; an entity reference's are not entered
                node = node.children
                continue
        while node is not c_root and node.next is NULL:
            node = node.parent
        if node is c_root:
            return found
        node = node.next


cdef Py_ssize_t _children_count(tree.xmlNode* element) noexcept:
    """How many children ``len(element)`` counts: elements, comments, processing instructions
    and entity references (what a walk over the children charges the document's budget)."""
    cdef Py_ssize_t count = 0
    cdef tree.xmlNode* child = element.children
    while child is not NULL:
        if cetree._isElement(child):
            count += 1
        child = child.next
    return count


def walked_rows(
    root,
    bytes name not None,
    bint first,
    tuple names,
    tuple leaves,
    tuple fragments,
    tuple kinds,
    Py_ssize_t limit,
    set charged not None,
    Py_ssize_t work_left,
    bint walks,
    type row_type not None,
):
    """The rows of a join block that binds every element named ``name`` (a UTF-8 local name, no
    namespace) in ``root``'s subtree, or only the first (``first``), each read as :func:`plain_row`
    reads it (``names`` to ``limit`` are its arguments), in one walk: what :func:`all_named` and
    a :func:`plain_row` call per element give (:class:`feedrouter.join.witness.Walked`), without
    the Python calls in between (a feed with joins reads such a block off every message).

    Returns ``(rows, size, units, rest)``:

    * ``rows``: per element read, in document order, ``(pre-order id, values, fragments)`` made a
      ``row_type`` (a tuple's subclass: :class:`~feedrouter.join.witness.WitnessRow`);
    * ``size``: what they count against ``limit`` (:func:`plain_row`'s sizes added up);
    * ``units``: the work their children's walks cost, with ``walks`` (a row that reads child
      elements): each element's children as ``len(element)`` counts them, once per document:
      the element is added to ``charged`` (the document's set; whichever path walks it next charges
      nothing). The caller charges them before it looks at the rest;
    * ``rest``: the elements from the first one the kernel declines on (see :func:`plain_row`) as
      ``(pre-order id, element)``, in document order, for the caller's path to read on from there
      (empty when every element was read here), not charged.

    ``rows`` is None where the next row would pass what ``limit`` leaves (the caller refuses the
    block, as for :func:`plain_row`'s False) or the units pass ``work_left`` (the caller's charge
    refuses the document): the walk stops at that element, its children charged. The refusals
    of :func:`plain_row` and :func:`all_named` for anything else."""
    return _walk(root, name, first, names, leaves, fragments, kinds, limit, charged, work_left, walks, row_type, NULL)


#: the arrays a batch's rows are packed in (:func:`walked_into`), in this order
cdef enum:
    ROOTS, VALUE_ROWS, VALUES, VALUE_ENDS, FRAGMENT_ROWS, FRAGMENTS, FRAGMENT_ENDS, ARRAYS


cdef struct Target:
    # where :func:`walked_into` packs its rows: the message's and the plan's numbers in the batch,
    # each leaf's and fragment's, and the batch's arrays (borrowed: the caller's tuple holds them)
    long long message
    long long plan
    long long leaf_codes[MAX_NAMES]
    long long fragment_codes[MAX_NAMES]
    PyObject* arrays[ARRAYS]
    Py_ssize_t entry[ARRAYS]  # their lengths when the walk began


def walked_into(tuple walk not None, long long message, tuple code not None, tuple arrays not None):
    """:func:`walked_rows` (``walk``: its first eleven arguments, ``row_type`` aside), the rows
    packed straight into a routing task's batch (the state's format 2,
    :class:`feedrouter.join.batches.RowSink`) as :func:`feedrouter.kernel.keep_batch` packs a
    row, with no object a row, a value or a fragment: ``message`` is the message's number
    in the batch, ``code`` the plan's numbers there (its own, its leaves', its fragments': what
    ``keep_batch`` numbers it), ``arrays`` the batch's seven arrays (roots, value rows, values,
    value ends, fragment rows, fragments, fragment ends: ``array('q')``, the values and fragments
    ``array('B')``). A value is copied from the nodes' UTF-8 as it is; its size is its length in
    characters, as a string's.

    Returns ``(count, size, units, rest, mark)``: how many rows were packed (None, with nothing
    left packed, where :func:`walked_rows` gives None), ``size``, ``units`` and ``rest`` as it gives
    them, and, where ``rest`` is not empty, the arrays' lengths before the walk (the caller takes
    the rows back to them if it refuses the rest)."""
    cdef Target target
    cdef Py_ssize_t i
    cdef tuple leaf_codes, fragment_codes
    cdef array.array numbers
    if len(walk) != 11:
        raise ValueError(f"walked_into: walked_rows' eleven first arguments, not {len(walk)}")
    if len(arrays) != ARRAYS:
        raise ValueError(f"walked_into: {ARRAYS} arrays, not {len(arrays)}")
    for i in range(ARRAYS):
        numbers = <array.array?>arrays[i]
        if (numbers.ob_descr.typecode != b'B') if i == VALUES or i == FRAGMENTS else (numbers.ob_descr.typecode != b'q'):
            raise TypeError("walked_into: rows in array('q'), values and fragments in array('B')")
        target.arrays[i] = <PyObject*>numbers
        target.entry[i] = Py_SIZE(numbers)
    root, name, first, names, leaves, fragments, kinds, limit, charged, work_left, walks = walk
    if not (
        type(name) is bytes and type(names) is tuple and type(leaves) is tuple and type(fragments) is tuple
        and type(kinds) is tuple and type(charged) is set
    ):  # the walk reads them as C types, None included
        raise TypeError("walked_into: walk holds walked_rows' arguments, of their types")
    leaf_codes, fragment_codes = code[1], code[2]
    if type(leaf_codes) is not tuple or type(fragment_codes) is not tuple:
        raise TypeError("walked_into: a plan's code is (its number, its leaves', its fragments')")
    if len(leaf_codes) != len(leaves) or len(fragment_codes) != len(fragments):
        raise ValueError("walked_into: a code per leaf and per fragment")
    if len(leaves) > MAX_NAMES or len(fragments) > MAX_NAMES:
        raise ValueError(f"walked_into: more than {MAX_NAMES} leaves or fragments")
    target.message, target.plan = message, code[0]
    for i in range(len(leaf_codes)):
        target.leaf_codes[i] = leaf_codes[i]
    for i in range(len(fragment_codes)):
        target.fragment_codes[i] = fragment_codes[i]
    try:
        found = _walk(
            root, name, first, names, leaves, fragments, kinds, limit, charged, work_left, walks, None, &target
        )
    except BaseException:  # the block fails alone: nothing of it may stay in the batch
        _truncate(&target)
        raise
    rows, size, units, rest = found
    if rows is None:
        _truncate(&target)
        return None, size, units, [], None
    mark = tuple([target.entry[i] for i in range(ARRAYS)]) if rest else None
    return rows, size, units, rest, mark


cdef int _truncate(Target* target) except -1:
    """The target's arrays back to their lengths when the walk began."""
    cdef Py_ssize_t i
    for i in range(ARRAYS):
        array.resize_smart(<array.array>target.arrays[i], target.entry[i])
    return 0


cdef tuple _walk(
    root,
    bytes name,
    bint first,
    tuple names,
    tuple leaves,
    tuple fragments,
    tuple kinds,
    Py_ssize_t limit,
    set charged,
    Py_ssize_t work_left,
    bint walks,
    type row_type,
    Target* target,
):
    """:func:`walked_rows`' walk; with a ``target``, each row packed there (:func:`walked_into`)
    and the first item of the answer the number of rows packed."""
    cdef Located at
    cdef Columns c
    cdef tree.xmlNode* c_root
    cdef tree.xmlNode* node
    cdef const char* c_name = PyBytes_AS_STRING(name)
    cdef Py_ssize_t nid = 0, size = 0, units = 0, nleaves = len(leaves), nfragments = len(fragments)
    cdef Py_ssize_t count = 0, packed
    cdef list rows = []
    cdef list rest = None
    cdef bint too_many
    cdef int collecting
    if not isinstance(root, cetree._Element):
        raise TypeError(f"feedrouter.kernel: not an lxml element: {type(root).__name__}")
    c_root = (<cetree._Element>root)._c_node
    if c_root is NULL or c_root.type != tree.XML_ELEMENT_NODE:
        raise TypeError("feedrouter.kernel: a search by name walks an element's subtree")
    _check_names(names)
    too_many = _read_columns(len(names), leaves, fragments, kinds, &c)
    cdef cetree._Document doc = (<cetree._Element>root)._doc
    collecting = PyGC_Disable()  # no collection, so no finalizer, while node pointers are held
    try:
        node = c_root
        while True:
            if node.type == tree.XML_ELEMENT_NODE:
                if node.ns is NULL and strcmp(<const char*>node.name, c_name) == 0:
                    if rest is not None:  # past a declined element: the caller's path reads on
                        rest.append((nid, cetree.elementFactory(doc, node)))
                    elif too_many or not _locate_node(node, names, &at):
                        rest = [(nid, cetree.elementFactory(doc, node))]
                    else:
                        if walks:
                            element = cetree.elementFactory(doc, node)
                            if element not in charged:
                                charged.add(element)
                                units += _children_count(node)
                                if units > work_left:
                                    return None, size, units, []
                        if target is not NULL:
                            packed = _packed_row(&at, &c, nleaves, nfragments, limit - size, nid, target)
                            if packed < 0:
                                return None, size, units, []
                            size += packed
                            count += 1
                        else:
                            found = _row(&at, &c, nleaves, nfragments, limit - size)
                            if found is False:
                                return None, size, units, []
                            size += <Py_ssize_t>found[2]
                            rows.append(tuple.__new__(row_type, (nid, found[0], found[1])))
                    if first:
                        break
                nid += 1
                if node.children is not NULL:  # as _named walks: an entity reference's are not entered
                    node = node.children
                    continue
            while node is not c_root and node.next is NULL:
                node = node.parent
            if node is c_root:
                break
            node = node.next
    finally:
        if collecting:
            PyGC_Enable()
    return count if target is not NULL else rows, size, units, rest if rest is not None else []


cdef inline int _push(object numbers, long long value) except -1:
    """Append ``value`` to an array of 64-bit integers, growing it as a list grows."""
    cdef array.array a = <array.array>numbers
    cdef Py_ssize_t size = Py_SIZE(a)
    array.resize_smart(a, size + 1)
    a.data.as_longlongs[size] = value
    return 0


cdef char* _room(object data, Py_ssize_t length) except NULL:
    """Room for ``length`` more bytes at the end of an array of bytes: where they start."""
    cdef array.array a = <array.array>data
    cdef Py_ssize_t size = Py_SIZE(a)
    array.resize_smart(a, size + length)
    return a.data.as_chars + size


cdef Py_ssize_t _chain_characters(tree.xmlNode* node) noexcept:
    """How many characters a run of sibling text nodes holds (its UTF-8's lead bytes): the
    length of the string :func:`_chain_string` makes of it."""
    cdef Py_ssize_t count = 0
    cdef const unsigned char* text
    while node is not NULL:
        text = node.content
        if text is not NULL:
            while text[0] != 0:
                if (text[0] & 0xC0) != 0x80:
                    count += 1
                text += 1
        node = node.next
    return count


cdef int _pack_value(
    Target* target, Py_ssize_t leaf, long long node, Py_ssize_t count, tree.xmlNode* texts, Py_ssize_t length
) except -1:
    """One value of a leaf: its row (the leaf's code, the message, the node, how many values the
    leaf has) and its UTF-8 (``length`` bytes of a run of text nodes), packed."""
    cdef object values = <object>target.arrays[VALUES]
    cdef object value_rows = <object>target.arrays[VALUE_ROWS]
    cdef char* out
    _push(value_rows, target.leaf_codes[leaf])
    _push(value_rows, target.message)
    _push(value_rows, node)
    _push(value_rows, count)
    out = _room(values, length)
    while texts is not NULL:
        if texts.content is not NULL:
            out = _write(out, <const char*>texts.content, strlen(<const char*>texts.content))
        texts = texts.next
    _push(<object>target.arrays[VALUE_ENDS], Py_SIZE(values))
    return 0


cdef Py_ssize_t _packed_row(
    Located* at, Columns* c, Py_ssize_t nleaves, Py_ssize_t nfragments, Py_ssize_t limit, long long node,
    Target* target,
) except -2:
    """:func:`_row`'s row packed into the target's arrays as :func:`feedrouter.kernel.keep_batch`
    packs it; its size, or -1 (nothing packed) where it would pass ``limit``."""
    cdef Py_ssize_t lengths[MAX_NAMES]  # each fragment's, in bytes
    cdef Py_ssize_t size = 16, i, column, count, length
    cdef tree.xmlNode* occurrence
    cdef char* out
    cdef object data = <object>target.arrays[FRAGMENTS]
    cdef object fragment_rows = <object>target.arrays[FRAGMENT_ROWS]
    cdef object fragment_ends = <object>target.arrays[FRAGMENT_ENDS]
    for i in range(nfragments):
        if not _is_child(at.names[c.fragments[i]]):
            raise ValueError("plain_row: a fragment reads child elements, not an attribute or the element")
    for i in range(nleaves):  # measured first: nothing is packed of a row past the limit
        column = c.leaves[i]
        occurrence = at.first[column]
        if at.count[column] == 1:
            size += _chain_characters(_texts_of(occurrence, at.names[column]))
        elif at.count[column] > 1:
            while occurrence is not NULL:
                size += _chain_characters(occurrence.children)
                occurrence = _next_named(occurrence, at.names[column])
    if size > limit:
        return -1
    for i in range(nfragments):
        column = c.fragments[i]
        lengths[i] = _fragment_length(at.first[column], at.names[column], c.kinds[i])
        size += lengths[i]
        if size > limit:
            return -1
    roots = <object>target.arrays[ROOTS]
    _push(roots, target.plan)
    _push(roots, target.message)
    _push(roots, node)
    for i in range(nleaves):  # each occurrence's value, as _occurrence_strings reads them
        column = c.leaves[i]
        count = at.count[column]
        occurrence = at.first[column]
        if count == 1:
            _pack_value(target, i, node, count, _texts_of(occurrence, at.names[column]), at.length[column])
        elif count > 1:
            _pack_value(target, i, node, count, occurrence.children, at.length[column])
            occurrence = _next_named(occurrence, at.names[column])
            while occurrence is not NULL:
                length = _text_nodes_length(occurrence.children)
                _pack_value(target, i, node, count, occurrence.children, length)
                occurrence = _next_named(occurrence, at.names[column])
    for i in range(nfragments):
        column = c.fragments[i]
        _push(fragment_rows, target.fragment_codes[i])
        _push(fragment_rows, target.message)
        _push(fragment_rows, node)
        out = _room(data, lengths[i])
        if at.first[column] is not NULL:
            _write_fragment(out, at.first[column], at.names[column], c.kinds[i])
        _push(fragment_ends, Py_SIZE(data))
    return size
