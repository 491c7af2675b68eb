# cython: language_level=3, wraparound=False
"""The compiled part of an hour's witness writer: the loops over every filed message and row.

The writer turns an hour's filed messages (:class:`~feedrouter.join.relations.MessageWitnesses`)
into columns, a few list appends per node and per row. In Python those appends cost more than the
array work that follows them (a message binds a node or two, so the writer's Python cost is per
message, and an hour has thousands). These loops do exactly what the Python loops beside them in
:mod:`feedrouter.join.relations` do (the tests compare the lists they fill), without the
interpreter between the appends. Only Python objects are touched: the module links against
nothing but Python. Only the numbering dicts are read with the dict API (checked dicts); the filed
messages are read through the object protocols, so a value of an unexpected type raises (as the
Python loops would) and never reads memory it does not own (indexes are bounds-checked: a row
too short raises IndexError).
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.ref cimport PyObject


cdef object _numbered(object numbers, object key):
    """``key``'s number in the dict ``numbers``, the next number if it has none yet."""
    cdef PyObject* known = PyDict_GetItem(numbers, key)
    if known is not NULL:
        return <object>known
    number = len(numbers)
    PyDict_SetItem(numbers, key, number)
    return number


def file_messages(list pending, object numbers, list hits, list counts, list messages, list nodes, list rows):
    """File each ``(number, found)`` of ``pending``: per node ``found.bound`` holds, its groups'
    numbers (``numbers``, a dict: a group not in it gets the next number) to ``hits``, their count
    to ``counts``, the message's number to ``messages`` and the node to ``nodes``; and
    ``(number, found.rows)`` to ``rows`` where the message has rows."""
    cdef dict bound
    if not isinstance(numbers, dict):  # read with the dict API below (a dict's subclass is one)
        raise TypeError(f"the groups' numbers must be a dict, not {type(numbers).__name__}")
    for number, found in pending:
        bound = found.bound
        for node, groups in bound.items():
            for group in groups:
                hits.append(_numbered(numbers, group))
            counts.append(len(groups))
            messages.append(number)
            nodes.append(node)
        found_rows = found.rows
        if found_rows:
            rows.append((number, found_rows))


def name_rows(list filed, Py_ssize_t side, dict codes, dict names, list name, list messages, list nodes, list items):
    """For each row of ``filed`` (``(number, [(names, row), ...])``), one side of it (``side``: 0
    the leaves, 1 the fragments), a row per item: its name's number to ``name`` (``names`` numbers
    a name as first seen; ``codes`` caches a tuple of names' numbers), the message's number to
    ``messages``, the row's node to ``nodes`` and the item to ``items``; the items of a leaf are
    its values, of a fragment its bytes."""
    cdef PyObject* known
    cdef tuple code
    cdef Py_ssize_t at, count
    if side != 0 and side != 1:
        raise ValueError(f"side is 0 (the leaves) or 1 (the fragments), not {side}")
    for number, found in filed:
        for pair in found:
            labels = pair[0][side]
            row = pair[1]
            known = PyDict_GetItem(codes, labels)
            if known is NULL:
                numbered = []
                for label in labels:
                    numbered.append(_numbered(names, label))
                code = tuple(numbered)
                PyDict_SetItem(codes, labels, code)
            else:
                code = <tuple?>known
            node = row[0]
            found_items = row[1 + side]
            if len(found_items) != len(code):
                raise ValueError(f"a row has {len(found_items)} items for {len(code)} names")
            for at in range(len(code)):
                if side == 0:
                    values = found_items[at]
                    count = len(values)
                    for value in values:
                        name.append(code[at])
                        items.append(value)
                else:
                    count = 1
                    name.append(code[at])
                    items.append(found_items[at])
                for _ in range(count):
                    messages.append(number)
                    nodes.append(node)
