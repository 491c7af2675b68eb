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

:func:`sorted_roots` turns the filed roots round into the roots table's rows by block: a dense
population's hour has tens of thousands of them (76,148 on the join bench's population A), and a
counting sort over the blocks' ranks places each once, where the array path (the reference beside
it) makes a dozen passes over them. It reads and writes buffers of 64-bit integers (NumPy's
arrays), every index checked.
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport Py_SIZE
from cpython.ref cimport PyObject

import array as _array  # cpython.array's functions need the module imported


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


def sorted_roots(
    const long long[::1] members,
    const long long[::1] firsts,
    const long long[::1] hits,
    const long long[::1] counts,
    const long long[::1] messages,
    const long long[::1] nodes,
    long long[::1] starts,
    long long[::1] blocks,
    long long[::1] out_messages,
    long long[::1] out_nodes,
):
    """The filed roots turned round into the roots table's rows, sorted by block, by a counting
    sort (two passes over the rows, none of the array passes a general sort makes).

    Per node ``i`` (``messages[i]``, ``nodes[i]``), its ``counts[i]`` groups are the next entries of
    ``hits``; group ``g``'s blocks are the ranks ``members[firsts[g]:firsts[g + 1]]``. Each (block,
    node) becomes a row: ``blocks``, ``out_messages`` and ``out_nodes`` (as long as the rows) are
    filled by block rank, in the order the nodes come within a block (stable), and ``starts`` (the
    ranks' count plus one, zeros) becomes where each rank's rows start, its last entry the rows'
    count. Every index is checked (the module's bounds checks): arrays that do not fit one another
    raise instead of reading or writing memory they do not own."""
    cdef Py_ssize_t names = starts.shape[0] - 1
    cdef Py_ssize_t node, hit, group, member, rank, taken, place
    cdef long long message, element
    if names < 0:
        raise ValueError("sorted_roots: starts needs an entry per block rank and one more")
    if counts.shape[0] != messages.shape[0] or counts.shape[0] != nodes.shape[0]:
        raise ValueError("sorted_roots: counts, messages and nodes have an entry per node")
    if out_messages.shape[0] != blocks.shape[0] or out_nodes.shape[0] != blocks.shape[0]:
        raise ValueError("sorted_roots: the three output columns have an entry per row")
    for rank in range(names + 1):
        if starts[rank] != 0:
            raise ValueError("sorted_roots: starts must come in as zeros")
    # count each rank's rows (at rank + 1: the prefix sums below make them starts)
    hit = 0
    for node in range(counts.shape[0]):
        if counts[node] < 0:
            raise ValueError("sorted_roots: a node's count of groups is negative")
        for taken in range(counts[node]):
            group = hits[hit]
            hit += 1
            for member in range(firsts[group], firsts[group + 1]):
                rank = members[member]
                if rank < 0 or rank >= names:
                    raise ValueError(f"sorted_roots: block rank {rank} is not among the {names} names")
                starts[rank + 1] += 1
    if hit != hits.shape[0]:
        raise ValueError("sorted_roots: the nodes' counts do not add up to the hits")
    for rank in range(names):
        starts[rank + 1] += starts[rank]
    if starts[names] != blocks.shape[0]:
        raise ValueError(f"sorted_roots: {starts[names]} rows, the columns hold {blocks.shape[0]}")
    # place each row at its rank's next place; starts[rank] walks to its rank's end
    hit = 0
    for node in range(counts.shape[0]):
        message, element = messages[node], nodes[node]
        for taken in range(counts[node]):
            group = hits[hit]
            hit += 1
            for member in range(firsts[group], firsts[group + 1]):
                rank = members[member]
                place = starts[rank]
                starts[rank] = place + 1
                blocks[place] = rank
                out_messages[place] = message
                out_nodes[place] = element
    # each entry holds its rank's end, the next rank's start: shift them back by one
    for rank in range(names, 0, -1):
        starts[rank] = starts[rank - 1]
    starts[0] = 0


def count_items(list filed, Py_ssize_t side):
    """How many rows :func:`fill_items` makes of ``filed`` (per message number, its rows with their
    names: ``(number, [(names, row), ...])``): per row, the values of each leaf (``side`` 0) or one
    per fragment (``side`` 1). A row whose items do not match its names raises."""
    cdef Py_ssize_t count = 0
    if side != 0 and side != 1:
        raise ValueError(f"side is 0 (the leaves) or 1 (the fragments), not {side}")
    for number, found in filed:
        for pair in found:
            labels = pair[0][side]
            found_items = pair[1][1 + side]
            if len(found_items) != len(labels):
                raise ValueError(f"a row has {len(found_items)} items for {len(labels)} names")
            if side == 1:
                count += len(found_items)
            else:
                for values in found_items:
                    count += len(values)
    return count


def fill_items(
    list filed,
    Py_ssize_t side,
    dict codes,
    dict names,
    long long[::1] name,
    list items,
    long long[::1] messages,
    long long[::1] nodes,
    long long[::1] counts=None,
):
    """For each row of ``filed`` (as :func:`count_items` takes it), one side of it (``side``: 0
    the leaves, 1 the fragments), a row per item: its name's number (``names`` numbers a name as
    first seen; ``codes`` caches a tuple of names' numbers), the message's number and the row's node
    written to ``name``, ``messages`` and ``nodes`` (as long as :func:`count_items` counted), the
    item appended to ``items``; the items of a leaf are its values, of a fragment its bytes. With
    ``counts`` (the leaves only), each value's row also gets how many values its leaf has in the
    row. Filling fewer or more rows than the arrays hold raises (indexes are checked)."""
    cdef PyObject* known
    cdef tuple code
    cdef Py_ssize_t at, row_at = 0
    cdef long long numbered_as, message, element
    if side != 0 and side != 1:
        raise ValueError(f"side is 0 (the leaves) or 1 (the fragments), not {side}")
    if messages.shape[0] != name.shape[0] or nodes.shape[0] != name.shape[0]:
        raise ValueError("fill_items: name, messages and nodes have an entry per row")
    if counts is not None and (side != 0 or counts.shape[0] != name.shape[0]):
        raise ValueError("fill_items: counts are the leaves' and have an entry per row")
    for number, found in filed:
        message = number
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
            element = row[0]
            found_items = row[1 + side]
            if len(found_items) != len(code):
                raise ValueError(f"a row has {len(found_items)} items for {len(code)} names")
            for at in range(len(code)):
                numbered_as = code[at]
                if side == 0:
                    values = found_items[at]
                    for value in values:
                        name[row_at] = numbered_as
                        messages[row_at] = message
                        nodes[row_at] = element
                        if counts is not None:
                            counts[row_at] = len(values)
                        items.append(value)
                        row_at += 1
                else:
                    name[row_at] = numbered_as
                    messages[row_at] = message
                    nodes[row_at] = element
                    items.append(found_items[at])
                    row_at += 1
    if row_at != name.shape[0]:
        raise ValueError(f"fill_items: {row_at} rows for arrays of {name.shape[0]}")




cdef inline int _push(array.array numbers, long long value) except -1:
    """Append ``value`` to an array of 64-bit integers (``array('q')``), growing it as a list
    grows."""
    cdef Py_ssize_t size = Py_SIZE(numbers)
    array.resize_smart(numbers, size + 1)
    numbers.data.as_longlongs[size] = value
    return 0


def keep_batch(
    list witnesses,
    dict names,
    dict codes,
    dict plans,
    dict leaves,
    dict fragment_names,
    array.array roots not None,
    array.array value_rows not None,
    array.array value_data not None,
    array.array value_ends not None,
    array.array fragment_rows not None,
    array.array fragment_data not None,
    array.array fragment_ends not None,
):
    """A routing task's batch of messages kept as stage 1 writes them (the state's format 2,
    :class:`feedrouter.join.batches.BatchBuilder`), in one pass: per message number ``i``
    (``witnesses[i]``, a dict: its witness rows by plan), each row of a plan that ``names`` names
    (its leaf names and fragment names; others, a clock's or another build's, are left out), in
    order, as flat rows of numbers appended to arrays of 64-bit integers (``array('q')``):

    * ``roots``: the plan's number, ``i``, the row's node;
    * ``value_rows``: per value of each leaf, the leaf's number, ``i``, the node and how many
      values the leaf has in the row; the value's UTF-8 appended to ``value_data`` (an
      ``array('B')``) and where it ends there to ``value_ends``;
    * ``fragment_rows``: per fragment, its name's number, ``i``, the node; its bytes appended to
      ``fragment_data`` and their end to ``fragment_ends``.

    The items are packed end to end as an Arrow column lays them out: the writer makes its string
    and binary columns from them without a Python object an item (a list of strings cost it 2 to 3
    us a message to flatten and convert), and a batch pickles as a few buffers.

    Plans, leaves and fragment names are numbered as first seen (``plans``, ``leaves``,
    ``fragment_names``: name -> number); ``codes`` caches a plan's numbers (None for a plan
    ``names`` does not name). A row whose items do not match its plan's names raises ValueError,
    an array of another type TypeError."""
    cdef Py_ssize_t number, at, count, length
    cdef long long node
    cdef const char* utf8
    cdef bytes fragment
    cdef PyObject* known
    cdef tuple code, leaf_codes, fragment_codes, row_values, row_fragments
    for numbers in (roots, value_rows, value_ends, fragment_rows, fragment_ends):
        if (<array.array>numbers).ob_descr.typecode != b'q':
            raise TypeError("keep_batch: the rows are arrays of 64-bit integers, array('q')")
    for data in (value_data, fragment_data):
        if (<array.array>data).ob_descr.typecode != b'B':
            raise TypeError("keep_batch: the items are packed in arrays of bytes, array('B')")
    for number in range(len(witnesses)):
        for plan, rows in (<dict?>witnesses[number]).items():
            if not rows:
                continue
            known = PyDict_GetItem(codes, plan)
            if known is NULL:
                found = _plan_codes(plan, names, plans, leaves, fragment_names)
                PyDict_SetItem(codes, plan, found)
                known = <PyObject*>found
            if <object>known is None:
                continue
            code = <tuple>known
            plan_number = code[0]
            leaf_codes = <tuple>code[1]
            fragment_codes = <tuple>code[2]
            for row in rows:
                node = row[0]
                row_values = <tuple?>row[1]
                row_fragments = <tuple?>row[2]
                if len(row_values) != len(leaf_codes) or len(row_fragments) != len(fragment_codes):
                    raise ValueError(f"a row of witness plan {plan} does not have its plan's leaves and fragments")
                _push(roots, plan_number)
                _push(roots, number)
                _push(roots, node)
                for at in range(len(leaf_codes)):
                    leaf_values = row_values[at]
                    count = len(leaf_values)
                    for value in leaf_values:
                        utf8 = PyUnicode_AsUTF8AndSize(<str?>value, &length)
                        _push(value_rows, leaf_codes[at])
                        _push(value_rows, number)
                        _push(value_rows, node)
                        _push(value_rows, count)
                        array.extend_buffer(value_data, <char*>utf8, length)
                        _push(value_ends, Py_SIZE(value_data))
                for at in range(len(fragment_codes)):
                    fragment = <bytes?>row_fragments[at]
                    _push(fragment_rows, fragment_codes[at])
                    _push(fragment_rows, number)
                    _push(fragment_rows, node)
                    array.extend_buffer(fragment_data, PyBytes_AS_STRING(fragment), PyBytes_GET_SIZE(fragment))
                    _push(fragment_ends, Py_SIZE(fragment_data))

cdef object _plan_codes(object plan, dict names, dict plans, dict leaves, dict fragment_names):
    """A plan's number and its leaves' and fragments' numbers (:func:`keep_batch`), or None
    when ``names`` does not name it."""
    cdef PyObject* named = PyDict_GetItem(names, plan)
    if named is NULL:
        return None
    leaf_names, names_of_fragments = <tuple?>named
    return (
        _numbered(plans, plan),
        tuple([_numbered(leaves, name) for name in leaf_names]),
        tuple([_numbered(fragment_names, name) for name in names_of_fragments]),
    )
