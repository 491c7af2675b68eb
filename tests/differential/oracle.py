"""A real XQuery processor (Saxon-HE through saxonche) as the oracle for subscription results."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree
from saxonche import PySaxonApiError, PySaxonProcessor


@dataclass
class OracleAnswer:
    """Saxon's serialized result and whether the subscription matched; ``error`` when Saxon raised."""

    result: bytes = b""
    matched: bool = False
    error: str | None = None


class SaxonOracle:
    """Evaluates subscription texts on documents with Saxon, the document being the context item."""

    def __init__(self) -> None:
        self._proc = PySaxonProcessor(license=False)
        self._xq = self._proc.new_xquery_processor()
        self._xq.set_property("!omit-xml-declaration", "yes")
        self._xq.set_property("!indent", "no")

    def document(self, data: bytes):  # type: ignore[no-untyped-def]
        return self._proc.parse_xml(xml_text=data.decode("utf-8"))

    def run(self, query: str, document) -> str:  # type: ignore[no-untyped-def]
        self._xq.set_query_content(query)
        self._xq.set_context(xdm_item=document)
        return self._xq.run_query_to_string() or ""

    def answer(self, text: str, probe: str, document) -> OracleAnswer:  # type: ignore[no-untyped-def]
        try:
            matched = self.run(probe, document).strip() == "true"
            result = self.run(text, document).encode("utf-8") if matched else b""
        except PySaxonApiError as exc:
            return OracleAnswer(error=str(exc).strip().splitlines()[-1])
        return OracleAnswer(result, matched)


def canonical(fragment: bytes) -> bytes:
    """C14N of a result (a sequence of nodes), wrapped so that it is one well-formed document."""
    root = etree.fromstring(b"<fr-result>" + fragment + b"</fr-result>")
    return etree.tostring(root, method="c14n")
