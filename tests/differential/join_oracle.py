"""Saxon-HE as the oracle for join subscriptions: the subscription text runs verbatim over files.

The subscription imports ``urn:feedrouter:stream:1`` without a location hint. Saxon's own resolver
would try to read the URN as a URL and fail, so the oracle gives its processor an XML catalog that maps
the module URI to a copy of ``feedrouter/join/stream.xq`` (``PySaxonProcessor.set_catalog_files``);
saxonche has no module resolver callback, and the catalog keeps the subscription text unchanged. The
module's external variable ``$fr:streams`` is bound like a main module's, by its Clark name with
``set_parameter``: Saxon looks external variables up across all the modules of a query.

Each run writes the documents to a fresh temporary directory, one file per message, named
``<feed index>-<position>.xml`` (feed index in the order the feeds were given), and binds the manifest
that lists them (its format is documented in stream.xq).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import quoteattr

from lxml import etree
from saxonche import PySaxonProcessor, PyXdmItem, PyXdmNode, PyXQueryProcessor

from feedrouter.join.clock import xs_datetime

MODULE_URI = "urn:feedrouter:stream:1"
STREAMS = f"{{{MODULE_URI}}}streams"
SERIALIZATION = {"!omit-xml-declaration": "yes", "!indent": "no"}  # as tests/differential/oracle.py

Message = tuple[bytes, datetime | None]
"""One message of a feed: its document and its event time (``None`` when it has none)."""


class SaxonJoinOracle:
    """Runs join subscriptions with Saxon over feeds given in stream order.

    One processor serves every run; saxonche compiles a query (and the modules it imports) on each
    run, as it has no compiled-query API for XQuery. Close the oracle, or use it as a context
    manager, to remove the catalog directory.

    Raises:
        saxonche.PySaxonApiError: from :meth:`run`, when Saxon refuses or fails the subscription. Its
            message is Saxon's, with the error code (``fr:bad-window``) or, for some errors raised
            during evaluation, only the description that fn:error was given.
    """

    def __init__(self) -> None:
        self._home = tempfile.TemporaryDirectory(prefix="fr-join-oracle-")
        self._proc = PySaxonProcessor(license=False)
        self._proc.set_catalog_files([str(self._write_catalog(Path(self._home.name)))])
        self._xq = self._new_query_processor()
        self._serializer = self._new_query_processor()
        self._serializer.set_query_content(".")

    def _write_catalog(self, home: Path) -> Path:
        module = home / "stream.xq"
        module.write_text(resources.files("feedrouter.join").joinpath("stream.xq").read_text("utf-8"))
        path = home / "catalog.xml"
        path.write_text(
            '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
            f"<uri name={quoteattr(MODULE_URI)} uri={quoteattr(module.as_uri())}/></catalog>",
            encoding="utf-8",
        )
        return path

    def _new_query_processor(self) -> PyXQueryProcessor:
        xq = self._proc.new_xquery_processor()
        for name, value in SERIALIZATION.items():
            xq.set_property(name, value)
        return xq

    def run(self, feeds: Mapping[str, Sequence[Message]], own: str, text: str) -> list[bytes]:
        """Evaluates a subscription over one batch of feeds.

        Args:
            feeds: Each feed's messages in stream order, by feed name.
            own: The subscription's own feed, the one ``fr:stream()`` returns.
            text: The subscription, run as it is.

        Returns:
            The top-level items of the result in XQuery order, each serialized on its own: nodes as
            XML (no declaration, no indentation), atomic values as their string value.
        """
        return self.run_all(feeds, own, [text])[0]

    def run_all(
        self, feeds: Mapping[str, Sequence[Message]], own: str, texts: Sequence[str]
    ) -> list[list[bytes]]:
        """:meth:`run` for several subscriptions of one feed over the same batch (written once)."""
        with tempfile.TemporaryDirectory(prefix="fr-join-batch-") as batch:
            manifest = write_batch(Path(batch), feeds, own)
            self._xq.set_parameter(STREAMS, self._proc.parse_xml(xml_text=manifest.decode("utf-8")))
            found = []
            for text in texts:
                self._xq.set_query_content(text)
                value = self._xq.run_query_to_value()
                found.append([] if value is None else [self._serialize(item) for item in value])
            return found

    def _serialize(self, item: PyXdmItem) -> bytes:
        if not isinstance(item, PyXdmNode):
            return str(item).encode("utf-8")
        # str(node) indents: serialize the node as the context item of "." instead
        self._serializer.set_context(xdm_item=item)
        return (self._serializer.run_query_to_string() or "").encode("utf-8")

    def close(self) -> None:
        """Removes the oracle's catalog and its copy of the module."""
        self._home.cleanup()

    def __enter__(self) -> SaxonJoinOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_batch(directory: Path, feeds: Mapping[str, Sequence[Message]], own: str) -> bytes:
    """Writes each message's document to ``directory`` and returns the manifest that lists them."""
    streams = etree.Element(f"{{{MODULE_URI}}}streams", nsmap={"fr": MODULE_URI}, own=own)
    for index, (name, messages) in enumerate(feeds.items()):
        feed = etree.SubElement(streams, f"{{{MODULE_URI}}}feed", name=name)
        for position, (document, time) in enumerate(messages):
            path = directory / f"{index:02d}-{position:06d}.xml"
            path.write_bytes(document)
            message = etree.SubElement(feed, f"{{{MODULE_URI}}}message", uri=path.as_uri())
            if time is not None:
                message.set("time", xs_datetime(time))
    return etree.tostring(streams)
