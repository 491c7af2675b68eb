"""Delivery: how an hour of routed messages becomes the objects a subscriber receives.

The Spark job (:mod:`feedrouter.spark`), the single-process hour run (:mod:`feedrouter.delivery.local`)
and the ``feedrouter route`` command run one routing loop, :func:`route_objects` (input objects cut
into messages by :class:`Splitter`, each routed, refused ones set aside); the first two render
results with :func:`write_parts`, so their part files are byte-equal by construction.
The layout below a subscriber's output prefix::

    {subscription}/{feed}/dt=YYYY-MM-DD/hour=HH/part-00000.xml   results in input order
                                              /_manifest.json    plan build, counts, part digests
                                              /_SUCCESS          written last: trust the folder

Like the core, this package imports only the standard library and lxml.
"""

from feedrouter.delivery.layout import (
    MANIFEST,
    SUCCESS,
    delivery_dir,
    format_hour,
    is_input_key,
    is_part_key,
    quarantine_dir,
    quarantine_key,
)
from feedrouter.delivery.local import HourRun, route_locally
from feedrouter.delivery.manifest import Manifest, PartInfo, PlanRef
from feedrouter.delivery.messages import CountingReader, Message, Splitter, dtd_text_of
from feedrouter.delivery.parts import Part, PartHeader, PartWriter, Result, read_part, write_parts
from feedrouter.delivery.routing import Routed, error_report, route_message, route_objects

__all__ = [
    "MANIFEST",
    "SUCCESS",
    "CountingReader",
    "HourRun",
    "Manifest",
    "Message",
    "Part",
    "PartHeader",
    "PartInfo",
    "PartWriter",
    "PlanRef",
    "Result",
    "Routed",
    "Splitter",
    "delivery_dir",
    "dtd_text_of",
    "error_report",
    "format_hour",
    "is_input_key",
    "is_part_key",
    "quarantine_dir",
    "quarantine_key",
    "read_part",
    "route_locally",
    "route_message",
    "route_objects",
    "write_parts",
]
