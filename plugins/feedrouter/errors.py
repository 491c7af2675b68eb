"""The one error tree of feedrouter.

Every error carries a stable code (``FR1xx`` language, ``FR2xx`` documents, ``FR3xx`` compile and
plans, ``FR4xx`` catalog, ``FR5xx`` storage), a message a user can act on and, where it applies, the
position in the subscription or document it is about. ``transient`` tells adapters (Airflow, Spark)
whether retrying can help.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: code -> short title; the message of each error says the specifics.
CODES: dict[str, str] = {
    # language (lang)
    "FR100": "syntax error",
    "FR101": "unexpected end of text",
    "FR102": "unterminated string literal or comment",
    "FR103": "missing closing bracket or brace",
    "FR104": "construct outside the supported subset",
    "FR105": "unknown namespace prefix",
    "FR106": "unknown variable",
    "FR107": "positional predicate",
    "FR108": "function call",
    "FR109": "backward or unsupported axis",
    "FR110": "mismatched constructor tags",
    "FR111": "attribute or text where an element is required",
    "FR112": "invalid literal",
    "FR113": "empty subscription",
    # documents (engine)
    "FR200": "malformed document",
    "FR201": "document too large",
    "FR202": "document nested too deeply",
    "FR203": "entity expansion refused",
    "FR204": "document is not UTF-8 or declares an unreadable encoding",
    # compile and plans (plan)
    "FR300": "subscription id already compiled",
    "FR301": "unknown subscription id",
    "FR302": "unknown strategy",
    "FR303": "invalid DTD",
    "FR304": "subscription can never match under the DTD",
    "FR305": "incompatible plan artifact",
    # catalog
    "FR400": "catalog error",
    # storage
    "FR500": "storage error",
    # hourly batches (spark: the error classes live in feedrouter.spark.errors)
    "FR600": "batch cannot be routed",
    "FR601": "feed has no plan build",
    "FR602": "two subscriptions deliver to the same folder",
    "FR603": "pyspark does not match its Spark JVM",
    "FR604": "injected failure (test hook)",
    "FR605": "another run of the same hour is in progress",
}


@dataclass(frozen=True)
class Span:
    """A position in a text: 1-based line and column, 0-based character offset."""

    line: int
    column: int
    offset: int = 0

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"


@dataclass
class ErrorDetail:
    """One problem found in an input; an error may carry several (the parser reports all it finds)."""

    code: str
    message: str
    span: Span | None = None
    excerpt: str = ""

    def render(self, source: str | None = None) -> str:
        where = f"{source}, " if source else ""
        at = f"{self.span}: " if self.span else ""
        text = f"{where}{at}[{self.code}] {self.message}"
        return f"{text}\n{self.excerpt}" if self.excerpt else text


class FeedrouterError(Exception):
    """Base of every error feedrouter raises on purpose."""

    transient: bool = False
    default_code = "FR000"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        span: Span | None = None,
        source: str | None = None,
        details: list[ErrorDetail] | None = None,
        excerpt: str = "",
    ) -> None:
        self.code = code or self.default_code
        self.span = span
        self.source = source
        self.details = details or [ErrorDetail(self.code, message, span, excerpt)]
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        return "\n".join(detail.render(self.source) for detail in self.details)

    def with_source(self, source: str) -> FeedrouterError:
        """Name the input (a subscription id, a document key) the error is about."""
        self.source = source
        self.args = (self._render(),)
        return self

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.column if self.span else None


class SubscriptionError(FeedrouterError):
    """A subscription text is not in the supported XQuery subset (or not XQuery at all)."""

    default_code = "FR100"


class DocumentError(FeedrouterError):
    """A document cannot be routed: malformed, too large, too deep or hostile."""

    default_code = "FR200"


class CompileError(FeedrouterError):
    """Compiling or changing a router failed for a reason other than the text of a subscription."""

    default_code = "FR300"


class CatalogError(FeedrouterError):
    default_code = "FR400"


class StorageError(FeedrouterError):
    default_code = "FR500"


class TransientStorageError(StorageError):
    """A storage call failed in a way a retry may fix (throttling, a dropped connection)."""

    transient = True


@dataclass
class CompileWarning:
    """Something a user should know about an accepted subscription (e.g. it can never match)."""

    subscription_id: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.subscription_id}: [{self.code}] {self.message}"


@dataclass
class ErrorReport:
    """Errors collected while compiling many subscriptions: one bad text never stops the others."""

    errors: dict[str, FeedrouterError] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.errors)
