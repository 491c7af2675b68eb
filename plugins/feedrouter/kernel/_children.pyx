# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled part of witness rows: an element's plain children by name, read off libxml2's tree.

A witness row wants, for each of a few child names, the children's string values and their
serialized copies. Where those children are *plain* — no namespace anywhere in scope, no attributes,
nothing but text inside — the copy is ``<name>escaped text</name>`` (``<name/>`` when empty) exactly
as libxml2 serializes it, and the value is the text: both are read here in one walk over the
children, without a Python object per child. Anything else answers None and the caller takes the
general path (:mod:`feedrouter.join.witness`), which is also this module's oracle in the tests.

Only libxml2's node structs are read (through lxml's public declarations); no libxml2 function is
called, so the module links against nothing but Python.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcpy, strcmp, strlen

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree

cetree.import_lxml__etree()

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


cdef bytes _text(tree.xmlNode* child, Py_ssize_t length):
    """A run of sibling text nodes' content joined, as UTF-8 bytes (``length`` of them)."""
    cdef bytes data
    cdef char* out
    cdef Py_ssize_t size
    if child is NULL:
        return b""
    if child.next is NULL:
        return PyBytes_FromStringAndSize(<const char*>child.content, length)
    data = PyBytes_FromStringAndSize(NULL, length)
    out = PyBytes_AS_STRING(data)
    while child is not NULL:
        if child.content is not NULL:
            size = strlen(<const char*>child.content)
            memcpy(out, child.content, size)
            out += size
        child = child.next
    return data


cdef str _decoded(bytes text):
    return PyUnicode_DecodeUTF8(PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), NULL)


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


cdef Py_ssize_t _copy_length(const char* name, bytes text):
    cdef Py_ssize_t n = strlen(name)
    cdef Py_ssize_t length = PyBytes_GET_SIZE(text)
    if length == 0 and text is not None:
        return n + 3  # <name/>
    return 2 * n + 5 + _escaped_length(<const unsigned char*>PyBytes_AS_STRING(text), length, _IN_TEXT)


cdef char* _write_copy(char* out, const char* name, bytes text):
    cdef Py_ssize_t n = strlen(name)
    cdef Py_ssize_t length = PyBytes_GET_SIZE(text)
    out = _write(out, b"<", 1)
    out = _write(out, name, n)
    if length == 0:
        return _write(out, b"/>", 2)
    out = _write(out, b">", 1)
    out = _write_escaped(out, <const unsigned char*>PyBytes_AS_STRING(text), length, _IN_TEXT)
    out = _write(out, b"</", 2)
    out = _write(out, name, n)
    return _write(out, b">", 1)


cdef object _attribute(tree.xmlNode* element, const char* name):
    """The value of the element's attribute ``name`` (no namespace) as a 1-tuple, () when it has
    none, or None when its value is not plain text nodes."""
    cdef tree.xmlAttr* attribute = element.properties
    cdef tree.xmlNode* child
    cdef Py_ssize_t length
    while attribute is not NULL:
        if attribute.ns is NULL and strcmp(<const char*>attribute.name, name) == 0:
            length = _text_nodes_length(attribute.children)
            if length < 0:
                return None
            text = _text(attribute.children, length)
            return (_decoded(text),)
        attribute = attribute.next
    return ()


cdef bint _declares_attributes(tree.xmlNode* element):
    """Whether the element's document has a DTD, which may give its attributes defaults that are
    not in the tree (``element.get`` answers them; a walk over the written attributes would not)."""
    cdef tree.xmlDoc* doc = element.doc
    return doc is not NULL and (doc.intSubset is not NULL or doc.extSubset is not NULL)


cdef inline bint _is_child(const char* name):
    """Whether a name is a child element's (not ``@name``, an own attribute, nor ``.``, the
    element's own string value)."""
    return name[0] != b'@' and name[0] != b'.'


cdef list _read_texts(element, tuple names, const char** c_names):
    """Per name, what the element holds of it: for a child name a list of its children's texts
    (UTF-8 bytes, document order; None when it has none), for ``@name`` a 1-tuple of the attribute's
    value or (), for ``.`` a list of its own text (it has nothing but text inside). None where the
    kernel declines (see :func:`plain_children`). Raises TypeError for anything but an lxml element
    and bytes names."""
    cdef tree.xmlNode* c_element
    cdef tree.xmlNode* child
    cdef Py_ssize_t count = len(names), i, length, children
    cdef list texts
    cdef object found, name
    if not isinstance(element, cetree._Element):
        raise TypeError(f"feedrouter.kernel: not an lxml element: {type(element).__name__}")
    for name in names:
        if type(name) is not bytes:
            raise TypeError(f"feedrouter.kernel: a name is not bytes: {type(name).__name__}")
    if count > MAX_NAMES:
        return None
    c_element = (<cetree._Element>element)._c_node
    if c_element.type != tree.XML_ELEMENT_NODE or _namespaces_in_scope(c_element):
        return None
    texts = [None] * count
    children = 0
    for i in range(count):
        c_names[i] = PyBytes_AS_STRING(names[i])
        if c_names[i][0] == b'@':
            if _declares_attributes(c_element):
                return None
            texts[i] = _attribute(c_element, c_names[i] + 1)
            if texts[i] is None:
                return None
        elif c_names[i][0] == b'.':
            length = _text_nodes_length(c_element.children)
            if length < 0:  # an element, a comment, a CDATA section inside: the caller's path
                return None
            texts[i] = [_text(c_element.children, length)]
        else:
            children += 1
    child = c_element.children if children else NULL  # own attributes only: no walk
    while child is not NULL:
        if child.type == tree.XML_ELEMENT_NODE:
            for i in range(count):  # every name that matches (a name given twice gets both)
                if not _is_child(c_names[i]) or strcmp(<const char*>child.name, c_names[i]) != 0:
                    continue
                length = _plain_text_length(child)
                if length < 0:
                    return None
                found = texts[i]
                if found is None:
                    found = texts[i] = []
                found.append(_text(child.children, length))
        child = child.next
    return texts


cdef Py_ssize_t _copies_length(const char* name, list found):
    """The length in bytes of the copies of a name's children (their texts ``found``)."""
    cdef Py_ssize_t size = 0
    cdef bytes text
    if found is None:
        return 0
    for text in found:
        size += _copy_length(name, text)
    return size


cdef bytes _copies(const char* name, list found, Py_ssize_t size):
    """The copies of a name's children (their texts ``found``, ``size`` bytes of copies), as
    ``etree.tostring`` writes them."""
    cdef bytes text, copies
    cdef char* out
    if found is None:
        return b""
    copies = PyBytes_FromStringAndSize(NULL, size)
    out = PyBytes_AS_STRING(copies)
    for text in found:
        out = _write_copy(out, name, text)
    return copies


cdef tuple _strings(const char* name, object found):
    """A name's values as strings: its children's (or its own) texts decoded, or an own
    attribute's 1-tuple."""
    cdef bytes text
    if found is None:
        return ()
    if name[0] == b'@':
        return <tuple>found
    return tuple([_decoded(text) for text in <list>found])


cdef Py_ssize_t _attribute_value_length(list found):
    """The length in bytes of a name's children's values in an attribute (:func:`_attribute_value`)."""
    cdef Py_ssize_t size = 0, n = 0
    cdef bytes text
    if found is None:
        return 0
    for text in found:
        if n:
            size += 1
        size += _escaped_length(
            <const unsigned char*>PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), _IN_ATTRIBUTE
        )
        n += 1
    return size


cdef bytes _attribute_value(list found, Py_ssize_t size):
    """A name's children's values joined by single spaces and escaped for an attribute value
    (``attribute_value`` of :mod:`feedrouter.output.factory`), ``size`` bytes."""
    cdef Py_ssize_t n = 0
    cdef bytes text, data
    cdef char* out
    if found is None:
        return b""
    data = PyBytes_FromStringAndSize(NULL, size)
    out = PyBytes_AS_STRING(data)
    for text in found:
        if n:
            out = _write(out, b" ", 1)
        out = _write_escaped(
            out, <const unsigned char*>PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), _IN_ATTRIBUTE
        )
        n += 1
    return data


cdef int _check_columns(Py_ssize_t count, tuple leaves, tuple fragments, tuple kinds) except -1:
    """Refuse columns that do not index the names (the walk reads them unchecked)."""
    cdef Py_ssize_t i, column
    if len(kinds) != len(fragments):
        raise ValueError("plain_row: a kind per fragment")
    for i in range(len(leaves) + len(fragments)):
        column = leaves[i] if i < len(leaves) else fragments[i - len(leaves)]
        if column < 0 or column >= count:
            raise ValueError(f"plain_row: a column is not the index of a name: {column}")
    return 0


def plain_row(element, tuple names, tuple leaves, tuple fragments, tuple kinds, Py_ssize_t limit):
    """A witness row read whole off the element's plain children and own attributes: ``names`` as
    for :func:`plain_children`; ``leaves``, per leaf, the index of its name; ``fragments``, per
    fragment, the index of its (child) name, with ``kinds`` saying how it is written: 0 the
    children's copies, 1 their values joined by spaces in an attribute. Returns ``(values,
    fragments, size)``: the leaves' string values, the fragments' bytes and the row's size (16 for
    its bookkeeping, the values' lengths in characters, the fragments' in bytes). None where
    :func:`plain_children` declines (the caller's path reads the row); False where the row would
    pass ``limit`` bytes, decided before any fragment is made (the caller's path refuses such a
    row too). Columns that do not index ``names`` raise ValueError."""
    cdef const char* c_names[MAX_NAMES]
    cdef list texts, values, data, lengths
    cdef Py_ssize_t size = 16, column, i, length
    cdef tuple strings
    cdef str string
    _check_columns(len(names), leaves, fragments, kinds)
    texts = _read_texts(element, names, c_names)
    if texts is None:
        return None
    for column in fragments:
        if not _is_child(c_names[column]):
            raise ValueError("plain_row: a fragment reads child elements, not an attribute or the element")
    values = []
    for column in leaves:
        strings = _strings(c_names[column], texts[column])
        for string in strings:
            size += len(string)
        values.append(strings)
    if size > limit:
        return False
    lengths = []
    for i in range(len(fragments)):
        column = fragments[i]
        if kinds[i] == 0:
            length = _copies_length(c_names[column], texts[column])
        else:
            length = _attribute_value_length(texts[column])
        size += length
        if size > limit:
            return False
        lengths.append(length)
    data = []
    for i in range(len(fragments)):
        column = fragments[i]
        if kinds[i] == 0:
            data.append(_copies(c_names[column], texts[column], lengths[i]))
        else:
            data.append(_attribute_value(texts[column], lengths[i]))
    return tuple(values), tuple(data), size


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
    cdef const char* c_names[MAX_NAMES]
    cdef list texts = _read_texts(element, names, c_names)
    cdef Py_ssize_t count = len(names), i, total
    cdef list sizes, result
    cdef object found
    if texts is None:
        return None
    sizes = [0] * count
    total = 0
    for i in range(count):
        if _is_child(c_names[i]):
            sizes[i] = _copies_length(c_names[i], texts[i])
            total += sizes[i]
            if total > limit:
                return None
    result = []
    for i in range(count):
        found = texts[i]
        if found is None:
            result.append(((), b""))
        elif not _is_child(c_names[i]):
            result.append((_strings(c_names[i], found), b""))
        else:
            result.append((_strings(c_names[i], found), _copies(c_names[i], found, sizes[i])))
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
