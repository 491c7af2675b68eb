# cython: language_level=3, wraparound=False, boundscheck=False
"""The compiled reader of a message's event time in the usual lexical forms.

A feed with join subscriptions has every message's event time parsed in its routing task
(:func:`feedrouter.join.clock.parse_event_time`): through :mod:`email.utils` an RFC 822 date costs
about 3 us, a third of filing the message's witnesses by block. Nearly every value a feed sends has
one form (``Wed, 01 May 2024 08:30:00 GMT``, ``2024-05-01T08:30:00Z``), and this module reads that
form alone: :func:`event_time` gives the time in UTC for a value it reads whole, and None for
anything else, which the Python path (the reference: property tests compare the two on values in
and near the usual form) then decides, refusing it or reading a variant (a two-digit year, a named
US zone, a lowercase month, out-of-range fields). So the kernel never says a value is unparsable;
it only answers what is plainly a time, and answers as the library does.

Only ASCII digits, letters and separators at fixed places are read; a value's length is checked
before every read.
"""

from cpython.datetime cimport datetime_new, import_datetime

import datetime as _datetime

import_datetime()

cdef object _UTC = _datetime.timezone.utc

#: the formats' codes (:data:`feedrouter.join.clock.FORMATS` names them)
RFC822 = 0
ISO8601 = 1

cdef tuple _MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
cdef tuple _DAYS = ("Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,")
#: no zone this module reads (an offset no zone has)
cdef int _NO_ZONE = 1 << 30


cdef inline int _digit(str text, Py_ssize_t at):
    """The ASCII digit at ``at`` (in range: the callers check the length), or -1."""
    cdef Py_UCS4 c = text[at]
    if c >= 48 and c <= 57:  # '0' to '9'
        return <int>c - 48
    return -1


cdef inline int _number(str text, Py_ssize_t at, Py_ssize_t width):
    """The ``width`` ASCII digits from ``at`` as a number, or -1 where one is not a digit."""
    cdef int found = 0
    cdef int d
    cdef Py_ssize_t i
    for i in range(at, at + width):
        d = _digit(text, i)
        if d < 0:
            return -1
        found = found * 10 + d
    return found


cdef inline bint _leap(long year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


cdef inline int _month_days(long year, int month):
    if month == 2:
        return 29 if _leap(year) else 28
    if month == 4 or month == 6 or month == 9 or month == 11:
        return 30
    return 31


cdef long long _days_from_civil(long long y, long long m, long long d):
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    cdef long long era = (y if y >= 0 else y - 399) // 400
    cdef long long yoe = y - era * 400
    cdef long long doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    cdef long long doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef object _utc(
    int year, int month, int day, int hour, int minute, int second, int micro, int offset, bint micros
):
    """The aware UTC datetime of a local time ``offset`` seconds east of UTC (fields in range), or
    with ``micros`` its microseconds since the epoch; None when it falls outside the years a
    datetime holds (the reference refuses it)."""
    cdef long long seconds = (
        _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    )
    cdef long long days = seconds // 86400
    cdef long long rest = seconds - days * 86400
    # the civil date of ``days`` (the inverse of _days_from_civil)
    cdef long long z = days + 719468
    cdef long long era = (z if z >= 0 else z - 146096) // 146097
    cdef long long doe = z - era * 146097
    cdef long long yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef long long doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef long long mp = (5 * doy + 2) // 153
    cdef long long d = doy - (153 * mp + 2) // 5 + 1
    cdef long long m = mp + (3 if mp < 10 else -9)
    cdef long long y = yoe + era * 400 + (m <= 2)
    if y < 1 or y > 9999:
        return None
    if micros:
        return seconds * 1000000 + micro
    return datetime_new(
        <int>y, <int>m, <int>d, <int>(rest // 3600), <int>(rest % 3600 // 60), <int>(rest % 60), micro, _UTC
    )


cdef object _rfc822(str text, bint micros):
    """``[Ddd, ]D[D] Mon YYYY HH:MM:SS ZONE``, the zone ``GMT``, ``UT``, ``UTC``, ``Z`` or
    ``+hhmm``/``-hhmm``, single spaces, nothing after; None for anything else."""
    cdef Py_ssize_t n = len(text)
    cdef Py_ssize_t at = 0
    cdef int day, month, year, hour, minute, second, offset, tens
    if n >= 5 and text[4] == u' ' and text[:4] in _DAYS:
        at = 5
    # the day: one digit or two
    if n - at < 2:
        return None
    day = _digit(text, at)
    if day < 0:
        return None
    at += 1
    tens = _digit(text, at)  # a second digit, if the day has one
    if tens >= 0:
        day = day * 10 + tens
        at += 1
    # " Mon YYYY HH:MM:SS " and a zone of at least one character
    if n - at < 20 or text[at] != u' ' or text[at + 4] != u' ' or text[at + 9] != u' ':
        return None
    month = _month(text[at + 1 : at + 4])
    year = _number(text, at + 5, 4)
    at += 10
    if month < 0 or year < 1000 or day < 1 or day > _month_days(year, month):
        return None
    hour = _number(text, at, 2)
    minute = _number(text, at + 3, 2)
    second = _number(text, at + 6, 2)
    if text[at + 2] != u':' or text[at + 5] != u':' or text[at + 8] != u' ':
        return None
    if hour < 0 or hour > 23 or minute < 0 or minute > 59 or second < 0 or second > 59:
        return None
    offset = _rfc822_zone(text, at + 9)
    if offset == _NO_ZONE:
        return None
    return _utc(year, month, day, hour, minute, second, 0, offset, micros)


cdef int _month(str name):
    cdef int i
    for i in range(12):
        if name == _MONTHS[i]:
            return i + 1
    return -1


cdef int _rfc822_zone(str text, Py_ssize_t at):
    """The offset in seconds of the zone from ``at`` to the value's end, or _NO_ZONE."""
    cdef str zone = text[at:]
    cdef int zh, zm, offset
    if zone == u"GMT" or zone == u"UT" or zone == u"UTC" or zone == u"Z":
        return 0
    if len(zone) != 5 or (zone[0] != u'+' and zone[0] != u'-'):
        return _NO_ZONE
    zh = _number(zone, 1, 2)
    zm = _number(zone, 3, 2)
    if zh < 0 or zh > 23 or zm < 0 or zm > 59:
        return _NO_ZONE
    offset = zh * 3600 + zm * 60  # "-0000", UTC with its local zone unknown: UTC all the same
    return -offset if zone[0] == u'-' else offset


cdef object _iso8601(str text, bint micros):
    """``YYYY-MM-DDTHH:MM:SS[.f...](Z|+hh:mm|-hh:mm)``, the hour at most 23; None otherwise."""
    cdef Py_ssize_t n = len(text)
    cdef Py_ssize_t at = 19
    cdef Py_ssize_t digits = 0
    cdef int year, month, day, hour, minute, second, zh, zm, offset, d
    cdef int micro = 0
    if n < 20:
        return None
    if (text[4] != u'-' or text[7] != u'-' or text[10] != u'T' or text[13] != u':'
            or text[16] != u':'):
        return None
    year = _number(text, 0, 4)
    month = _number(text, 5, 2)
    day = _number(text, 8, 2)
    hour = _number(text, 11, 2)
    minute = _number(text, 14, 2)
    second = _number(text, 17, 2)
    if year < 1 or month < 1 or month > 12 or day < 1 or day > _month_days(year, month):
        return None
    if hour < 0 or hour > 23 or minute < 0 or minute > 59 or second < 0 or second > 59:
        return None
    if text[at] == u'.':
        at += 1
        while at < n:
            d = _digit(text, at)
            if d < 0:
                break
            if digits < 6:  # sub-microsecond digits are dropped, as the reference drops them
                micro = micro * 10 + d
            digits += 1
            at += 1
        if digits == 0:
            return None
        while digits < 6:
            micro *= 10
            digits += 1
    if n - at == 1 and text[at] == u'Z':
        offset = 0
    elif n - at == 6 and (text[at] == u'+' or text[at] == u'-') and text[at + 3] == u':':
        zh = _number(text, at + 1, 2)
        zm = _number(text, at + 4, 2)
        if zh < 0 or zm < 0 or zm > 59 or zh * 60 + zm > 14 * 60:  # the range XML Schema allows
            return None
        offset = zh * 3600 + zm * 60
        if text[at] == u'-':
            offset = -offset
    else:
        return None
    return _utc(year, month, day, hour, minute, second, micro, offset, micros)


def event_time(str text, int fmt):
    """The time ``text`` gives in format ``fmt`` (:data:`RFC822`, :data:`ISO8601`) as an aware
    UTC datetime, when it is in the form this module reads; None for anything else (the Python
    path decides it: :func:`feedrouter.join.clock.parse_event_time`)."""
    if fmt == RFC822:
        return _rfc822(text, False)
    if fmt == ISO8601:
        return _iso8601(text, False)
    return None


def event_micros(str text, int fmt):
    """:func:`event_time`'s time as microseconds since the epoch (an int), or None: what the
    witness tables hold, without a datetime in between (every message of a feed with joins has
    its time read)."""
    if fmt == RFC822:
        return _rfc822(text, True)
    if fmt == ISO8601:
        return _iso8601(text, True)
    return None
