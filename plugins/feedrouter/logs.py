"""How feedrouter's log records are written: as text, or as one JSON object per line.

``--log-format json`` (or ``FEEDROUTER_LOG_FORMAT=json``) suits log collectors: each record is one
line with ``time``, ``level``, ``logger`` and ``message``, and every field a caller attached with
``extra=`` becomes a key of its own. The batch driver names its batch that way
(``feedrouter_feed``, ``feedrouter_hour``, ``feedrouter_batch_id``), so a collector can filter one
feed's hour without parsing messages. Stdlib only.

Example:
    >>> record = logging.LogRecord("feedrouter.spark", logging.INFO, "", 0, "routing %d", (3,), None)
    >>> record.feedrouter_feed = "news"
    >>> line = json.loads(JsonFormatter().format(record))
    >>> line["message"], line["feedrouter_feed"], line["level"]
    ('routing 3', 'news', 'INFO')
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from feedrouter.errors import error

FORMATS = ("text", "json")
#: Where feedrouter's loggers live ("feedrouter.spark", "feedrouter.catalog", …).
LOGGER = "feedrouter"

# What every LogRecord carries: anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: the standard fields, the ``extra=`` fields, and the exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(extra_fields(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        # default=str: an extra field of any type is written, never a reason to lose the record
        return json.dumps(line, ensure_ascii=False, default=str)


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a caller attached to ``record`` with ``extra=`` (or a LoggerAdapter)."""
    return {
        key: value for key, value in vars(record).items() if key not in _STANDARD and not key.startswith("_")
    }


@contextmanager
def configured(log_format: str, level: int = logging.INFO) -> Iterator[None]:
    """Inside the block, feedrouter's records go to stderr in ``log_format``; ``text`` leaves
    logging as it was. The ``feedrouter`` logger is restored afterwards.

    Raises:
        SettingsError: [FR700] ``log_format`` is not one of :data:`FORMATS`.
    """
    if log_format not in FORMATS:
        raise error("FR700", f"FEEDROUTER_LOG_FORMAT is {log_format!r}: expected one of {', '.join(FORMATS)}")
    if log_format == "text":
        yield
        return
    logger = logging.getLogger(LOGGER)
    saved = (logger.level, logger.propagate)
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # the JSON line only, not a second text copy through the root logger
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.level, logger.propagate = saved
