# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled decider of a join base's tests: which blocks a witness row binds.

A base's blocks are found among its rows by their factored conditions (:mod:`feedrouter.join.
selections`): comparisons with a literal, existence, literal string matches, under ``not``, ``and``,
``or``. Every test is a formula over a few *atoms*, and rows repeat a few patterns of the atoms'
truth values, so a decider evaluates the atoms of a row here, in one loop over a table of them, and
looks the pattern up among the ones it has seen; only a new pattern goes back to Python, which works
out its blocks from the formulas (:func:`feedrouter.join.selections.decider`'s ``blocks_of``).

Nothing is generated or compiled per decider: making one is filling its table, so every key of a
base can have its own from its first row on (the Python path generates a function per decider,
0.1 to 1 ms to compile, and keeps closures until a key is hot). The Python path stays the reference
and the fallback; the tests run both.
"""

cimport cython
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_New
from cpython.ref cimport PyObject
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject_IsTrue
from cpython.sequence cimport PySequence_Contains
from cpython.unicode cimport PyUnicode_Check, PyUnicode_Tailmatch

#: the kinds of atom (:class:`Decider`'s table)
cdef enum:
    EXISTS = 0    # the leaf has a value
    HAS = 1       # one of the leaf's values is the string
    ANY = 2       # a comparator holds for one of the leaf's values
    CONTAINS = 3  # the leaf's one value (or "") contains the needle; more than one value: false
    STARTS = 4    # ... starts with it
    ENDS = 5      # ... ends with it
    CALL = 6      # a checker of the whole row (a regex or several needles)
    LAST = 6

#: atoms whose truth values make the pattern key a machine word; more and it is bytes
cdef enum:
    WORD_ATOMS = 62

#: how deep :class:`Tests` reads ``not``/``and``/``or`` itself before the checker takes over (C
#: recursion has no interpreter's limit to stop it)
cdef enum:
    MAX_NESTING = 32


cdef bint _string_match(int kind, leaf, needle) except -1:
    """contains / starts-with / ends-with (``kind``) of a leaf's one value and a needle: false on
    more than one value, the empty string on none (:mod:`feedrouter.plan.evaluate`)."""
    cdef object value
    if len(leaf) > 1:
        return False
    value = leaf[0] if len(leaf) else ""
    if kind == CONTAINS:
        return PySequence_Contains(value, needle)
    if not PyUnicode_Check(value) or not PyUnicode_Check(needle):
        return PyObject_IsTrue(value.startswith(needle) if kind == STARTS else value.endswith(needle))
    return PyUnicode_Tailmatch(value, needle, 0, len(value), -1 if kind == STARTS else 1) == 1


cdef class Decider:
    """The blocks a row's tests bind: ``[blocks]`` (one tuple, in the groups' order) or ``[]``,
    what :func:`feedrouter.join.selections.decider` returns.

    Args:
        atoms: per atom ``(kind, leaf position, argument)``: the argument is the string of ``HAS``,
            the needle of a string match, the comparator of ``ANY``, the checker of ``CALL``.
        blocks_of: the blocks of a pattern (an int of the atoms' truth values, bit ``i`` atom
            ``i``'s, or past 62 atoms bytes of 0 and 1), worked out in Python on its first row.
        patterns: the most patterns kept.
        kept: the process's budget of kept references, a one-item list shared by every decider
            (a pattern's atoms and blocks count), added to in place; ``budget`` its limit.
        own: this decider's share of it, a one-item list (given back when the decider goes).
    """

    cdef Py_ssize_t count
    cdef int* kinds
    cdef Py_ssize_t* positions
    cdef tuple arguments
    cdef object blocks_of
    cdef dict memo
    cdef Py_ssize_t patterns
    cdef list kept
    cdef Py_ssize_t budget
    cdef list own
    cdef object __weakref__

    def __init__(self, atoms, blocks_of, Py_ssize_t patterns, list kept not None, Py_ssize_t budget,
                 list own not None):
        cdef Py_ssize_t i
        cdef list arguments = []
        atoms = list(atoms)
        if len(kept) != 1 or len(own) != 1:
            raise ValueError("Decider: the budget and its share are one-item lists")
        if self.kinds is not NULL:
            raise TypeError("Decider: made once")
        self.kinds = <int*>PyMem_Malloc(max(len(atoms), 1) * sizeof(int))
        self.positions = <Py_ssize_t*>PyMem_Malloc(max(len(atoms), 1) * sizeof(Py_ssize_t))
        if self.kinds is NULL or self.positions is NULL:
            raise MemoryError()
        for i, (kind, position, argument) in enumerate(atoms):
            if not 0 <= kind <= LAST:
                raise ValueError(f"Decider: not a kind of atom: {kind!r}")
            if position < 0:
                raise ValueError(f"Decider: not a leaf position: {position!r}")
            self.kinds[i] = kind
            self.positions[i] = position
            arguments.append(argument)
        self.count = len(atoms)
        self.arguments = tuple(arguments)
        self.blocks_of = blocks_of
        self.memo = {}
        self.patterns = patterns
        self.kept = kept
        self.budget = budget
        self.own = own

    def __dealloc__(self):
        PyMem_Free(self.kinds)
        PyMem_Free(self.positions)

    def __call__(self, values):
        cdef object key
        cdef object found
        cdef Py_ssize_t size
        if self.count <= WORD_ATOMS:
            key = self._word(values)
        else:
            key = self._bytes(values)
        found = self.memo.get(key)
        if found is None:
            found = self.blocks_of(key)
            if len(self.memo) < self.patterns and self.kept[0] < self.budget:
                self.memo[key] = found
                size = self.count + len(found)
                self.kept[0] += size
                self.own[0] += size
        if found:
            return [found]
        return PyList_New(0)

    cdef object _word(self, values):
        cdef unsigned long long bits = 0
        cdef Py_ssize_t i
        for i in range(self.count):
            if self._holds(i, values):
                bits |= (<unsigned long long>1) << i
        return bits

    cdef object _bytes(self, values):
        cdef bytearray truth = bytearray(self.count)
        cdef Py_ssize_t i
        for i in range(self.count):
            if self._holds(i, values):
                truth[i] = 1
        return bytes(truth)

    cdef bint _holds(self, Py_ssize_t i, values) except -1:
        cdef int kind = self.kinds[i]
        cdef object argument = self.arguments[i]
        cdef object leaf
        cdef object value
        if kind == CALL:
            return PyObject_IsTrue(argument(values))
        leaf = values[self.positions[i]]
        if kind == EXISTS:
            return len(leaf) > 0
        if kind == HAS:
            return PySequence_Contains(leaf, argument)
        if kind == ANY:
            for value in leaf:
                if PyObject_IsTrue(argument(value)):
                    return True
            return False
        return _string_match(kind, leaf, argument)

    @property
    def atoms(self):
        """How many atoms it evaluates per row."""
        return self.count

    @property
    def kept_patterns(self):
        """How many patterns' blocks it keeps."""
        return len(self.memo)


#: the kinds of atom by the name :mod:`feedrouter.join.selections` gives them
KINDS = {
    "exists": EXISTS,
    "has": HAS,
    "any": ANY,
    "contains": CONTAINS,
    "starts-with": STARTS,
    "ends-with": ENDS,
    "call": CALL,
}


cdef class Tests:
    """The blocks a row's tests bind, each test read as it is (the plan's nested tuples:
    ``("compare", position, op, literal)``, ``("exists", position)``, ``("match", position, name,
    needles)``, ``("not", test)``, ``("and" | "or", tests)``) with nothing built beforehand: what a
    key's bucket answers (:func:`feedrouter.join.selections._bucket`). Most keys of a base come
    once or twice an hour and hold a few tests, so making anything for a bucket on its first row
    (a table, closures, a generated function) costs more than reading its tests on the rows that
    bring it. A bucket whose rows keep coming is worth a :class:`Decider` (its atoms decided once
    a row, its patterns kept): past ``hot`` rows it asks ``make_hot`` for one and answers by it.

    Args:
        entries: ``((blocks, test), ...)``, each test (once) with the tuple of blocks it binds.
        equal: the ``=`` operator of comparisons (a comparison with a string by it is a look-up
            among the leaf's values).
        checker: the reference's function of a test (:func:`feedrouter.join.selections.checker`),
            which decides what is not read here (other comparisons, regular expressions, several
            needles, and tests nested past :data:`MAX_NESTING`).
        hot: the rows it reads before it asks for its decider.
        make_hot: the decider of ``entries`` (a function of the row giving ``[blocks]`` or ``[]``).
    """

    cdef tuple entries
    cdef object equal
    cdef object checker
    cdef Py_ssize_t hot
    cdef Py_ssize_t rows
    cdef object make_hot
    cdef object decide
    cdef dict functions

    def __init__(self, tuple entries not None, equal, checker, Py_ssize_t hot, make_hot):
        self.entries = entries
        self.equal = equal
        self.checker = checker
        self.functions = None
        self.hot = hot
        self.rows = 0
        self.make_hot = make_hot
        self.decide = None

    def __call__(self, values):
        cdef list found
        cdef object entry
        if self.decide is not None:
            return self.decide(values)
        self.rows += 1
        if self.rows > self.hot:
            self.decide = self.make_hot(self.entries)
            return self.decide(values)
        found = []
        for entry in self.entries:
            if self._holds(<tuple>(<tuple>entry)[1], values, 0):
                found.extend(<tuple>(<tuple>entry)[0])
        if found:
            return [tuple(found)]
        return found

    @property
    def is_hot(self):
        """Whether it answers by its decider now."""
        return self.decide is not None

    cdef object _function(self, tuple test):
        """The checker's function of a test read outside C, found once per test object (the
        checker's own cache hashes the test, literals and all, on every call)."""
        cdef object function
        if self.functions is None:
            self.functions = {}
        function = self.functions.get(id(test))
        if function is None:
            function = self.functions[id(test)] = self.checker(test)
        return function

    cdef bint _holds(self, tuple test, values, int nesting) except -1:
        cdef object kind = test[0]
        cdef object value, literal, needles, name, term
        if kind == "exists":
            return len(values[test[1]]) > 0
        if kind == "compare":
            literal = test[3]
            value = literal.value
            if test[2] is self.equal and PyUnicode_Check(value):
                return PySequence_Contains(values[test[1]], value)
            return PyObject_IsTrue(self._function(test)(values))
        if nesting >= MAX_NESTING:
            return PyObject_IsTrue(self._function(test)(values))
        if kind == "not":
            return not self._holds(<tuple>test[1], values, nesting + 1)
        if kind == "and":
            for term in <tuple>test[1]:
                if not self._holds(<tuple>term, values, nesting + 1):
                    return False
            return True
        if kind == "or":
            for term in <tuple>test[1]:
                if self._holds(<tuple>term, values, nesting + 1):
                    return True
            return False
        if kind != "match":
            raise ValueError(f"Tests: not a test: {kind!r}")
        name, needles = test[2], test[3]
        if len(<tuple>needles) != 1 or not (name == "contains" or name == "starts-with" or name == "ends-with"):
            return PyObject_IsTrue(self._function(test)(values))
        return _string_match(
            CONTAINS if name == "contains" else STARTS if name == "starts-with" else ENDS,
            values[test[1]],
            (<tuple>needles)[0],
        )


def bind(tuple checks not None, rows, dict bound not None, make_bucket):
    """The blocks each witness row of one plan binds, filed in ``bound`` (node -> groups of
    blocks); the rows some block bound: :meth:`feedrouter.join.selections.Served.bind`'s loop, its
    reference, over the checks it made (``(decide, [(position, buckets)], [(position, finder,
    buckets)])``). A key's entries become its bucket on its first row (``make_bucket``), stored in
    place as the reference stores them. Every row of a feed's messages goes through here: in C
    the loop's look-ups and branches cost no bytecode, and a needle finder's automaton is walked
    without the reference's generator frame. What it is given is read through the object
    protocols or checked before the dict API reads it: a malformed argument raises, as the
    reference would, and never reads memory it does not own."""
    return _bind(checks, rows, bound, make_bucket)


@cython.boundscheck(True)
cdef list _bind(tuple checks, rows, dict bound, make_bucket):
    """:func:`bind`'s loop (:func:`file_rows` calls it per plan, without a Python call)."""
    cdef object decide, index, needles
    cdef list kept = []
    cdef list found
    cdef object row, node, values, strings, value, bucket, word, known, finder, automaton, hits
    cdef object position, by_key
    cdef dict buckets
    decide, index, needles = checks
    for row in rows:
        node, values = row[0], row[1]  # a WitnessRow: (node, values, fragments)
        found = _groups(decide(values))  # a new list each time: it becomes the node's
        for position, by_key in index:
            buckets = <dict?>by_key
            strings = values[position]
            for value in (strings if len(strings) < 2 else dict.fromkeys(strings)):
                bucket = buckets.get(value)
                if bucket is None:
                    continue
                if type(bucket) is list:  # its first row in this process
                    bucket = make_bucket(bucket)
                    buckets[value] = bucket
                _file_bucket(bucket, values, found)
        for position, finder, by_key in needles:
            strings = values[position]
            if len(strings) > 1:
                continue  # the call's argument is more than one item: false
            buckets = <dict?>by_key
            automaton = finder.automaton
            value = strings[0] if len(strings) else ""
            if automaton is None:  # starts-with, ends-with: the finder's own way
                hits = finder.find(value)
            else:  # contains: the automaton's words, as the finder gathers them
                hits = set()
                for _, word in automaton.iter(value):
                    hits.add(word)
                if finder.empty:
                    hits.add("")
            for value in hits:
                bucket = buckets[value]
                if type(bucket) is list:
                    bucket = make_bucket(bucket)
                    buckets[value] = bucket
                _file_bucket(bucket, values, found)
        if found:
            kept.append(row)
            known = bound.get(node)
            if known is None:
                bound[node] = found
            else:  # another plan's rows bound the node too (its blocks are others)
                known.extend(found)
    return kept


@cython.boundscheck(True)
def file_rows(witnesses, dict table not None, dict bound not None, list filed not None, make_bucket, entry_of):
    """A message's witness rows filed by block, every plan's in one call: per ``(plan, rows)`` of
    ``witnesses`` (a mapping), the plan's ``(checks, names)`` from ``table`` (missing: asked of
    ``entry_of(plan)`` once and kept there; None: a plan that serves no block, left out), its rows
    filed in ``bound`` as :func:`bind` files them, and ``(names, row)`` appended to ``filed`` for
    each row some block bound: :meth:`feedrouter.join.selections.WitnessPlans.file`'s loop, its
    reference, without a Python frame per plan and row. An entry is indexed with bounds checks
    (this module's are off elsewhere): one that is not a pair raises, never reads past its end."""
    cdef PyObject* known
    cdef object entry
    cdef tuple pair
    cdef object names
    for plan, rows in witnesses.items():
        known = PyDict_GetItem(table, plan)
        if known is NULL:
            entry = entry_of(plan)
            table[plan] = entry
        else:
            entry = <object>known
        if entry is None:
            continue
        pair = <tuple?>entry
        names = pair[1]
        for row in _bind(<tuple?>pair[0], rows, bound, make_bucket):
            filed.append((names, row))


cdef inline list _groups(found):
    """A decider's answer, checked: the list a node's groups are filed in."""
    if type(found) is not list:
        raise TypeError(f"a decider answers with a list of groups, not {type(found).__name__}")
    return <list>found


cdef inline int _file_bucket(bucket, values, list found) except -1:
    """A bucket's blocks for a row: those bound outright, then those its decider finds (``found``
    is never None: :func:`_groups` made it)."""
    cdef object blocks = bucket.blocks
    cdef object decide = bucket.decide
    if blocks:
        found.append(blocks)
    if decide is not None:
        found.extend(decide(values))
    return 0
