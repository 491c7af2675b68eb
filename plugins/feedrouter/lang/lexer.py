"""Tokens of the subscription language, and the diagnostics every stage of the parser reports into.

XQuery has no reserved words and two lexical modes (expressions and direct element content), so the
lexer does not run ahead on its own: the parser asks for the token at an offset
(:meth:`Lexer.token_at`) and, inside an element constructor, for the next piece of element content
(:meth:`Lexer.content_at`). Keywords are names that the parser recognizes where a keyword may stand.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from feedrouter.errors import ErrorDetail, Span, SubscriptionError

_NAME_START = (
    "A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_NAME_CHAR = _NAME_START + r"\-.0-9\u00b7\u0300-\u036f\u203f-\u2040"
NCNAME = re.compile(f"[{_NAME_START}][{_NAME_CHAR}]*")
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BAD_EXPONENT = re.compile(r"[eE][+-]?(?![0-9])")
# Not a Char of XML 1.0: XQuery rejects these anywhere in a query.
_INVALID_CHAR = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CHAR_REF = re.compile(r"&#(?:([0-9]+)|x([0-9a-fA-F]+));")
_ENTITY_REF = re.compile(r"&(lt|gt|amp|quot|apos);")
_CONTENT_SPECIAL = re.compile("[<{}]")  # what ends a run of plain character data
# An attribute value ends at the first lone quote outside its enclosed expressions (a doubled quote
# and "{{" are XQuery's escapes of a quote and a brace); '<' may not stand in it (XPST0003).
_ATTRIBUTE_SPECIAL = {
    q: re.compile("|".join(re.escape(s) for s in (q + q, q, "{{", "{", "<"))) for q in ("'", '"')
}
ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
XML_WHITESPACE = " \t\r\n"

# Longest first, so that "//" wins over "/" and "<=" over "<".
_PUNCTUATION = (
    "//", "::", ":=", "!=", "<=", ">=", "<<", ">>", "=>", "||", "..",
    "/", "{", "}", "[", "]", "(", ")", ",", ";", "@", ".", "*", "=", "<", ">", "|", "!", "+", "-",
    "$", "?", "#", ":", "%",
)  # fmt: skip
_PUNCT = re.compile("|".join(re.escape(p) for p in _PUNCTUATION))  # alternatives tried in that order


class Stop(Exception):
    """Raised after a fatal diagnostic: the rest of the text cannot be read with confidence."""


class Recover(Exception):
    """Raised after a diagnostic the nearest enclosing construct can skip over and go on."""


@dataclass(frozen=True)
class RawName:
    """A name as written: ``prefix:local``, ``local`` or (``uri`` set) ``Q{uri}local``."""

    prefix: str
    local: str
    uri: str | None = None

    def __str__(self) -> str:
        if self.uri is not None:
            return f"Q{{{self.uri}}}{self.local}"
        return f"{self.prefix}:{self.local}" if self.prefix else self.local


@dataclass(frozen=True)
class Token:
    """One expression-mode token. ``kind`` is name, string, number, punct or eof."""

    kind: str
    text: str
    start: int
    end: int
    value: str | float | RawName | None = None

    def is_punct(self, *texts: str) -> bool:
        """A punctuation token among ``texts``."""
        return self.kind == "punct" and self.text in texts

    def is_name(self, *locals_: str) -> bool:
        """A plain (unprefixed) name among ``locals_``: how keywords are recognized."""
        return self.kind == "name" and isinstance(self.value, RawName) and self.text in locals_

    def describe(self) -> str:
        """How messages name the token: ``'x'`` or "the end of the text"."""
        return "the end of the text" if self.kind == "eof" else f"'{self.text}'"


@dataclass(frozen=True)
class Content:
    """One piece of direct element content: text, ``{``, ``<name``, ``</name>`` or the end of the text.

    For text, ``value`` is the character data with references resolved and ``boundary`` tells whether
    it is boundary whitespace (only literal whitespace: XQuery drops it).
    """

    kind: str
    start: int
    end: int
    value: str = ""
    boundary: bool = False


#: Problems one text may report; past it the parser stops (a hostile text could list thousands).
MAX_PROBLEMS = 100


class Diagnostics:
    """Collects the problems found in one text; renders positions and caret excerpts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.details: list[ErrorDetail] = []
        self._offsets: set[int] = set()  # positions already reported, so each add() costs O(1)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def span(self, offset: int) -> Span:
        """The 1-based line and column of ``offset``."""
        line = bisect.bisect_right(self._line_starts, offset)
        return Span(line, offset - self._line_starts[line - 1] + 1, offset)

    def excerpt(self, offset: int) -> str:
        """The line of ``offset`` and a caret under its column (tabs kept so the caret lines up)."""
        span = self.span(offset)
        start = self._line_starts[span.line - 1]
        end = self.text.find("\n", start)
        line = self.text[start : end if end >= 0 else len(self.text)]
        column = span.column - 1
        # Long lines: show a window around the column so the caret stays readable.
        cut = max(0, column - 60)
        shown = ("..." if cut else "") + line[cut : cut + 100]
        pad = "".join("\t" if ch == "\t" else " " for ch in line[cut:column])
        return f"  {shown}\n  {'   ' if cut else ''}{pad}^"

    def add(self, code: str, message: str, offset: int) -> None:
        """Record a problem at ``offset`` (one per position: the first word stands).

        Raises:
            Stop: the text already reported :data:`MAX_PROBLEMS` problems (one FR114 note is added).
        """
        if offset in self._offsets:
            return
        if len(self.details) >= MAX_PROBLEMS:
            note = f"more than {MAX_PROBLEMS} problems; the rest of the text was not read"
            self.details.append(ErrorDetail("FR114", note, self.span(offset), self.excerpt(offset)))
            raise Stop()
        self._offsets.add(offset)
        self.details.append(ErrorDetail(code, message, self.span(offset), self.excerpt(offset)))

    def fail(self, code: str, message: str, offset: int) -> Stop:
        """Record a fatal problem; returns the exception for the caller to raise."""
        self.add(code, message, offset)
        return Stop()

    def recover(self, code: str, message: str, offset: int) -> Recover:
        """Record a problem the enclosing construct can skip; returns the exception to raise."""
        self.add(code, message, offset)
        return Recover()

    def error(self, source: str | None) -> SubscriptionError:
        """The error to raise: the first problem's code and position, every problem in ``details``."""
        first = self.details[0]
        return SubscriptionError(
            first.message, code=first.code, span=first.span, source=source, details=list(self.details)
        )


class Lexer:
    """Reads tokens and element content from a subscription text (line ends already normalized)."""

    def __init__(self, text: str, diagnostics: Diagnostics) -> None:
        self.text = text
        self.diag = diagnostics
        self._tokens: dict[int, Token] = {}  # the parser looks ahead and back: read each token once

    # -- expression mode -------------------------------------------------------------------------

    def token_at(self, pos: int) -> Token:
        """The token that starts at ``pos`` or after the whitespace and comments there."""
        token = self._tokens.get(pos)
        if token is None:
            token = self._tokens[pos] = self._read_token(pos)
        return token

    def _read_token(self, pos: int) -> Token:
        pos = self.skip_trivia(pos)
        text = self.text
        if pos >= len(text):
            return Token("eof", "", pos, pos)
        ch = text[pos]
        if ch in "\"'":
            return self._string(pos)
        if _NUMBER.match(text, pos):  # str.isdigit() would take '²', which XQuery does not
            return self._number(pos)
        if ch == "Q" and text.startswith("Q{", pos):
            return self._braced_name(pos)
        if NCNAME.match(text, pos):
            return self._name(pos)
        local = NCNAME.match(text, pos + 2) if ch == "*" and text.startswith(":", pos + 1) else None
        if local is not None:
            return Token("wildcard", text[pos : local.end()], pos, local.end())
        punct = _PUNCT.match(text, pos)
        if punct is not None:
            return Token("punct", punct.group(), pos, punct.end())
        raise self.diag.fail("FR100", f"unexpected character {ch!r}", pos)

    def skip_trivia(self, pos: int) -> int:
        """Skip whitespace and (nested) ``(: comments :)``."""
        text = self.text
        while pos < len(text):
            if text[pos] in XML_WHITESPACE:
                pos += 1
            elif text.startswith("(:", pos):
                pos = self._comment_end(pos)
            else:
                break
        return pos

    def _comment_end(self, start: int) -> int:
        depth, pos = 0, start
        while pos < len(self.text):
            if self.text.startswith("(:", pos):
                depth, pos = depth + 1, pos + 2
            elif self.text.startswith(":)", pos):
                depth, pos = depth - 1, pos + 2
                if depth == 0:
                    return pos
            else:
                pos += 1
        raise self.diag.fail("FR102", "unterminated comment: close it with ':)'", start)

    def _name(self, pos: int) -> Token:
        match = NCNAME.match(self.text, pos)
        assert match is not None
        end, prefix, local = match.end(), "", match.group()
        if self.text.startswith(":", end):
            after = NCNAME.match(self.text, end + 1)
            if after:
                prefix, local, end = local, after.group(), after.end()
            elif self.text.startswith(":*", end):
                return Token("wildcard", self.text[pos : end + 2], pos, end + 2)
        return Token("name", self.text[pos:end], pos, end, RawName(prefix, local))

    def _braced_name(self, pos: int) -> Token:
        close = self.text.find("}", pos + 2)
        brace = self.text.find("{", pos + 2, max(close, pos + 2))  # only up to the '}': linear overall
        if close < 0 or brace >= 0:
            raise self.diag.fail("FR100", "expected '}' to close the namespace URI of 'Q{...}name'", pos)
        local = NCNAME.match(self.text, close + 1)
        any_local = local is None and self.text.startswith("*", close + 1)  # Q{uri}*: a wildcard
        if local is None and not any_local:
            raise self.diag.fail("FR100", "expected a local name or '*' after 'Q{...}'", close + 1)
        uri = self.text[pos + 2 : close]
        if "&" in uri:
            raise self.diag.fail("FR104", "references in a 'Q{...}' namespace URI are not supported", pos)
        uri = collapse_whitespace(uri)
        if local is None:
            return Token("wildcard", self.text[pos : close + 2], pos, close + 2, RawName("", "*", uri))
        end = local.end()
        return Token("name", self.text[pos:end], pos, end, RawName("", local.group(), uri))

    def _number(self, pos: int) -> Token:
        match = _NUMBER.match(self.text, pos)
        assert match is not None
        end = match.end()
        if _BAD_EXPONENT.match(self.text, end):
            raise self.diag.fail("FR112", "invalid numeric literal: the exponent needs digits", pos)
        if NCNAME.match(self.text, end) or self.text.startswith(".", end):
            raise self.diag.fail(
                "FR112", "invalid numeric literal: put a space between a number and what follows", pos
            )
        value = float(match.group())
        if value in (float("inf"), float("-inf")):
            raise self.diag.fail("FR112", "numeric literal out of range of xs:double", pos)
        return Token("number", match.group(), pos, end, value)

    def _string(self, pos: int) -> Token:
        quote, text = self.text[pos], self.text
        parts: list[str] = []
        i = pos + 1
        while True:
            j = text.find(quote, i)
            if j < 0:
                raise self.diag.fail("FR102", f"unterminated string literal: close it with {quote}", pos)
            parts.append(self.resolve_references(text[i:j], i))
            if text.startswith(quote, j + 1):  # a doubled quote stands for one
                parts.append(quote)
                i = j + 2
                continue
            return Token("string", text[pos : j + 1], pos, j + 1, "".join(parts))

    def resolve_references(self, chunk: str, offset: int) -> str:
        """Resolve ``&lt;``-style and ``&#...;`` references; a bare ``&`` is an error, as in XQuery."""
        if "&" not in chunk:
            return chunk
        out: list[str] = []
        i = 0
        while (amp := chunk.find("&", i)) >= 0:
            out.append(chunk[i:amp])
            resolved, length = self.reference(chunk, amp, offset + amp)
            out.append(resolved)
            i = amp + length
        out.append(chunk[i:])
        return "".join(out)

    def reference(self, chunk: str, amp: int, offset: int) -> tuple[str, int]:
        """The character of the reference at ``amp`` in ``chunk`` (which is at ``offset`` in the text)
        and its length; a bad one is reported and stands for itself."""
        entity = _ENTITY_REF.match(chunk, amp)
        if entity:
            return ENTITIES[entity.group(1)], entity.end() - amp
        char = _CHAR_REF.match(chunk, amp)
        if char:
            code = _reference_code(char.group(1), char.group(2))
            if code > 0x10FFFF or _INVALID_CHAR.match(chr(code)):
                self.diag.add("FR112", f"character reference {char.group()} is not an XML character", offset)
                return "", char.end() - amp
            return chr(code), char.end() - amp
        self.diag.add(
            "FR112", "'&' must start a reference such as '&amp;' (write '&amp;' for a literal '&')", offset
        )
        return "&", 1

    # -- direct element constructors ---------------------------------------------------------------

    def tag_name(self, pos: int) -> tuple[RawName, int] | None:
        """The QName right at ``pos`` (no whitespace may precede it in a tag) and its end."""
        token = self._name(pos) if NCNAME.match(self.text, pos) else None
        if token is None or not isinstance(token.value, RawName):
            return None
        return token.value, token.end

    def skip_space(self, pos: int) -> int:
        """Skip XML whitespace (inside tags comments are not allowed, so not skipped)."""
        while pos < len(self.text) and self.text[pos] in XML_WHITESPACE:
            pos += 1
        return pos

    def attribute_value(self, pos: int) -> tuple[str, int, int]:
        """``= "value"`` of an attribute in a start tag: the value as written between its quotes
        (doubled quotes, ``{{``, references and enclosed expressions are left to the parser), where
        it starts, and the end."""
        pos = self.skip_space(pos)
        if not self.text.startswith("=", pos):
            raise self.diag.fail("FR100", "expected '=' after the attribute name", pos)
        pos = self.skip_space(pos + 1)
        quote = self.text[pos : pos + 1]
        if quote not in ("'", '"'):
            raise self.diag.fail("FR100", "expected a quoted attribute value", pos)
        special = _ATTRIBUTE_SPECIAL[quote]
        end, less_than = pos + 1, -1
        while True:
            found = special.search(self.text, end)
            if found is None:  # a missing quote is the problem then, more likely than the '<'
                raise self.diag.fail("FR102", "unterminated attribute value", pos)
            at, end = found.start(), found.end()
            if found.group() == quote:
                break
            if found.group() == "<" and less_than < 0:
                less_than = at
            elif found.group() == "{":
                end = self.enclosed_end(at)
        if less_than >= 0:
            self.diag.add("FR100", "'<' is not allowed in an attribute value; write '&lt;'", less_than)
        return self.text[pos + 1 : at], pos + 1, end

    def enclosed_end(self, brace: int) -> int:
        """The end (after its ``}``) of the enclosed expression opening at ``brace``, found by reading
        its tokens: in an attribute value, XQuery reads the expression's strings and comments as
        its own, so they may hold the attribute's quote or a brace."""
        depth, pos = 0, brace + 1
        while True:
            token = self.token_at(pos)
            if token.kind == "eof":
                raise self.diag.fail("FR103", "missing '}' to close the enclosed expression", brace)
            if token.is_punct("{"):
                depth += 1
            elif token.is_punct("}"):
                if depth == 0:
                    return token.end
                depth -= 1
            pos = token.end

    def content_at(self, pos: int) -> Content:
        """The next piece of element content at ``pos``."""
        text = self.text
        if pos >= len(text):
            return Content("eof", pos, pos)
        if text.startswith("</", pos):
            return Content("end", pos, pos + 2)
        if text.startswith("{", pos) and not text.startswith("{{", pos):
            return Content("enclosed", pos, pos + 1)
        if text.startswith("<", pos) and not text.startswith("<![CDATA[", pos):
            return self._markup(pos)
        return self._char_data(pos)

    def _markup(self, pos: int) -> Content:
        if self.text.startswith("<!--", pos):
            return self._comment(pos)
        for opener, closer, what in (("<?", "?>", "processing instructions"),):
            if self.text.startswith(opener, pos):
                end = self.text.find(closer, pos)
                if end < 0:
                    raise self.diag.fail("FR102", f"unterminated {what[:-1]}: close it with '{closer}'", pos)
                self.diag.add("FR104", f"{what} in element constructors are not supported", pos)
                return Content("skip", pos, end + len(closer))
        return Content("start", pos, pos + 1)

    def _comment(self, pos: int) -> Content:
        """A direct comment constructor; XQuery forbids '--' inside it and '-' at its end (XPST0003)."""
        end = self.text.find("-->", pos + 4)
        if end < 0:
            raise self.diag.fail("FR102", "unterminated XML comment: close it with '-->'", pos)
        body = self.text[pos + 4 : end]
        if "--" in body or body.endswith("-"):
            self.diag.add("FR100", "a comment may not hold '--' nor end with '-'", pos)
        return Content("comment", pos, end + 3, body)

    def _char_data(self, pos: int) -> Content:
        """Text up to the next tag or enclosed expression, with ``{{``, ``}}``, references and CDATA."""
        text, start = self.text, pos
        out: list[str] = []
        literal_only = True  # references and CDATA are never boundary whitespace
        while pos < len(text):
            if text.startswith(("{{", "}}"), pos):
                out.append(text[pos])
                literal_only, pos = False, pos + 2
            elif text[pos] == "}":
                self.diag.add("FR100", "a literal '}' in element content must be written '}}'", pos)
                out.append("}")
                literal_only, pos = False, pos + 1
            elif text.startswith("<![CDATA[", pos):
                end = text.find("]]>", pos)
                if end < 0:
                    raise self.diag.fail("FR102", "unterminated CDATA section: close it with ']]>'", pos)
                out.append(text[pos + 9 : end])
                literal_only, pos = False, end + 3
            elif text[pos] in "<{":
                break
            else:
                stop = _next_special(text, pos)
                chunk = text[pos:stop]
                literal_only = literal_only and "&" not in chunk
                out.append(self.resolve_references(chunk, pos))
                pos = stop
        value = "".join(out)
        boundary = literal_only and all(ch in XML_WHITESPACE for ch in value)
        return Content("text", start, pos, value, boundary)


def _reference_code(decimal: str | None, hexadecimal: str | None) -> int:
    """The code point of ``&#...;``; past U+10FFFF for any number too long to be one (leading zeros
    are allowed; Python refuses to convert decimal strings of more than 4,300 digits)."""
    digits = (decimal or hexadecimal or "0").lstrip("0") or "0"
    if len(digits) > 8:
        return 0x110000
    return int(digits, 10 if decimal else 16)


def _next_special(text: str, pos: int) -> int:
    """The offset of the next character that ends a run of plain character data."""
    # One scan that stops at the first of them: three find() calls each ran to the end of the text
    # when a character was absent, quadratic over many short runs.
    found = _CONTENT_SPECIAL.search(text, pos)
    return found.start() if found else len(text)


def collapse_whitespace(uri: str) -> str:
    """xs:anyURI whitespace normalization, which XQuery applies to every namespace URI it reads."""
    return re.sub("[ \t\r\n]+", " ", uri).strip(" ")


def invalid_character(text: str) -> int | None:
    """The offset of the first character XML (and so XQuery) does not allow, if any."""
    match = _INVALID_CHAR.search(text)
    return match.start() if match else None
