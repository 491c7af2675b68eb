"""The one error tree of feedrouter.

Every error carries a stable code (``FR1xx`` language, ``FR2xx`` documents, ``FR3xx`` compile,
plans and routing, ``FR4xx`` catalog, ``FR5xx`` storage, ``FR6xx`` hourly batches, ``FR7xx``
settings), a message a user can act on and, where it applies, the position in the subscription
or document it is about.
``transient`` tells adapters (Airflow, Spark) whether retrying can help.

:data:`TABLE` is the one place a code is defined: it names the class that carries the code and a
short title. :func:`error` builds an error from its code, so the code picks the class and an unknown
code is refused (the way elementpath raises from its code table).
"""

from __future__ import annotations

from dataclasses import dataclass


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


class RoutingError(FeedrouterError):
    """One subscription's results for one document cannot be delivered (too large, an internal
    failure of its plan); the other subscriptions of the document are not affected."""

    default_code = "FR312"


class CatalogError(FeedrouterError):
    """The catalog refuses a request or holds something feedrouter cannot serve."""

    default_code = "FR400"


class TransientCatalogError(CatalogError):
    """The catalog could not be reached or the transaction lost a race; a later retry may succeed."""

    default_code = "FR402"
    transient = True


class StorageError(FeedrouterError):
    """An object store refuses a request (wrong bucket, no permission, an unsafe key)."""

    default_code = "FR500"


class TransientStorageError(StorageError):
    """A storage call failed in a way a retry may fix (throttling, a dropped connection)."""

    default_code = "FR502"
    transient = True


class ObjectNotFoundError(StorageError):
    """The key names no object (terminal: retrying does not make it appear)."""

    default_code = "FR501"


class BatchError(FeedrouterError):
    """An hour of a feed cannot be routed as configured (the same input fails every time)."""

    default_code = "FR600"


class NoPlanBuildError(BatchError):
    """The feed has no plan build: run ``feedrouter build-plan --feed NAME`` first."""

    default_code = "FR601"


class DeliveryConflictError(BatchError):
    """Two served subscriptions would write the same folder (same output prefix and name)."""

    default_code = "FR602"


class SparkVersionError(BatchError):
    """The installed pyspark Python files do not belong to the Spark JVM they drive, or the
    session is set up in a way exactly-once delivery cannot work with (speculation)."""

    default_code = "FR603"


class InjectedFailure(BatchError):
    """A failure a test asked for (:class:`~feedrouter.spark.spec.Fault`); a retry succeeds."""

    default_code = "FR604"
    transient = True


class BatchBusyError(BatchError):
    """Another run of the same feed and hour holds its lock; retry once it has finished."""

    default_code = "FR605"
    transient = True


class LockLostError(BatchError):
    """The run lost its hour lease (its connection dropped, another run took over): it must not
    commit; a retry starts over under a new lease."""

    default_code = "FR606"
    transient = True


class HourError(BatchError):
    """An hour that is not a whole UTC hour (terminal: the same input fails every time)."""

    default_code = "FR608"


class SubscriberDeliveryError(BatchError):
    """Delivering one subscriber's results failed; recorded against that subscriber, retried by
    the next run of the hour."""

    default_code = "FR607"


class WitnessesNotReady(BatchError):
    """A join stage needs witnesses that stage 1 has not written yet (an earlier hour of its window
    not routed yet): retried until they are there."""

    default_code = "FR609"
    transient = True


class BackfillNeeded(BatchError):
    """A join stage needs a block an hour's witnesses lack (the hour was routed before the block
    existed): the hour's witnesses are back-filled, then the stage runs."""

    default_code = "FR610"


class WitnessesUnreadable(BatchError):
    """A table of an hour's join witnesses cannot be read (damaged or not written by feedrouter):
    the message names it; deleting the hour's folder has the join stage back-fill it from the
    hour's inputs."""

    default_code = "FR611"


class InputsGone(BatchError):
    """An hour's join witnesses must be back-filled, but the documents the hour routed are gone
    from its inputs: its pairs cannot be made again (restore the inputs and re-run)."""

    default_code = "FR612"


class SettingsError(FeedrouterError):
    """A setting is missing or invalid (the message names it and where it was read from)."""

    default_code = "FR700"


@dataclass
class CompileWarning:
    """Something a user should know about an accepted subscription (e.g. it can never match)."""

    subscription_id: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.subscription_id}: [{self.code}] {self.message}"


#: code -> (the class that carries it, a short title); the message of each error says the specifics.
TABLE: dict[str, tuple[type[FeedrouterError], str]] = {
    # language (lang)
    "FR100": (SubscriptionError, "syntax error"),
    "FR101": (SubscriptionError, "unexpected end of text"),
    "FR102": (SubscriptionError, "unterminated string literal or comment"),
    "FR103": (SubscriptionError, "missing closing bracket or brace"),
    "FR104": (SubscriptionError, "construct outside the supported subset"),
    "FR105": (SubscriptionError, "unknown namespace prefix"),
    "FR106": (SubscriptionError, "unknown variable"),
    "FR107": (SubscriptionError, "positional predicate"),
    "FR108": (SubscriptionError, "function call"),
    "FR109": (SubscriptionError, "backward or unsupported axis"),
    "FR110": (SubscriptionError, "mismatched constructor tags"),
    "FR111": (SubscriptionError, "attribute or text where an element is required"),
    "FR112": (SubscriptionError, "invalid literal"),
    "FR113": (SubscriptionError, "empty subscription"),
    "FR114": (SubscriptionError, "subscription text too long or too complex"),
    "FR115": (SubscriptionError, "too many alternatives"),
    "FR116": (SubscriptionError, "join subscription where a per-document one is expected"),
    "FR117": (SubscriptionError, "join subscription the feeds' settings cannot serve"),
    # documents (engine, delivery)
    "FR200": (DocumentError, "malformed document"),
    "FR201": (DocumentError, "document too large"),
    "FR202": (DocumentError, "document nested too deeply"),
    "FR203": (DocumentError, "entity expansion refused"),
    "FR204": (DocumentError, "document is not UTF-8 or declares an unreadable encoding"),
    "FR205": (DocumentError, "document exceeds the routing work budget"),
    "FR206": (DocumentError, "compressed input is corrupt, truncated or expands too far"),
    "FR207": (DocumentError, "document is not valid against the feed DTD"),
    # compile and plans (plan)
    "FR300": (CompileError, "internal error while compiling a subscription"),
    "FR301": (CompileError, "unknown subscription id"),
    "FR302": (CompileError, "unknown strategy or optimization level"),
    "FR303": (CompileError, "invalid DTD"),
    "FR304": (CompileError, "subscription can never match under the DTD"),
    "FR305": (CompileError, "incompatible plan artifact"),
    "FR306": (CompileError, "plan artifact belongs to another feed"),
    "FR307": (CompileError, "subscription id already compiled"),
    "FR308": (CompileError, "optimization needs the feed's DTD"),
    # routing one document (router)
    "FR310": (RoutingError, "result larger than the per-subscription limit"),
    "FR311": (RoutingError, "the document's results exceed the per-document limit"),
    "FR312": (RoutingError, "internal error while evaluating a subscription's plan"),
    "FR313": (RoutingError, "a join subscription's pairs or result bytes exceed the per-hour cap"),
    # catalog
    "FR400": (CatalogError, "catalog error"),
    "FR401": (CatalogError, "catalog not configured"),
    "FR402": (TransientCatalogError, "catalog unreachable or busy"),
    "FR403": (CatalogError, "invalid subscription name or output prefix"),
    "FR404": (CatalogError, "two subscriptions deliver to the same target"),
    "FR405": (CatalogError, "no feed of that name"),
    # storage
    "FR500": (StorageError, "storage error"),
    "FR501": (ObjectNotFoundError, "no such object"),
    "FR502": (TransientStorageError, "storage temporarily unavailable"),
    "FR503": (StorageError, "unsafe or non-canonical key or prefix"),
    # hourly batches (spark, delivery)
    "FR600": (BatchError, "batch cannot be routed"),
    "FR601": (NoPlanBuildError, "feed has no plan build"),
    "FR602": (DeliveryConflictError, "two subscriptions deliver to the same folder"),
    "FR603": (SparkVersionError, "pyspark does not match its Spark JVM"),
    "FR604": (InjectedFailure, "injected failure (test hook)"),
    "FR605": (BatchBusyError, "another run of the same hour is in progress"),
    "FR606": (LockLostError, "the run lost its hour lock"),
    "FR607": (SubscriberDeliveryError, "delivery to one subscriber failed"),
    "FR608": (HourError, "not a whole UTC hour"),
    "FR609": (WitnessesNotReady, "join witnesses of an hour of the window are not written yet"),
    "FR610": (BackfillNeeded, "join witnesses of an hour lack a block: back-fill the hour"),
    "FR611": (WitnessesUnreadable, "join witnesses of an hour cannot be read"),
    "FR612": (InputsGone, "an hour to back-fill has lost its inputs"),
    # settings
    "FR700": (SettingsError, "missing or invalid setting"),
}

#: code -> short title (the table without its classes), for listings and documentation.
CODES: dict[str, str] = {code: title for code, (_cls, title) in TABLE.items()}


def error(code: str, message: str, **details: object) -> FeedrouterError:
    """The error for ``code``, of the class the table names for it.

    ``details`` are the keyword arguments of :class:`FeedrouterError` (``span``, ``source``,
    ``excerpt``). An unknown code is a bug in feedrouter and is refused.

    >>> error("FR201", "the document has 9 bytes, more than the limit of 8").__class__.__name__
    'DocumentError'
    """
    try:
        cls, _title = TABLE[code]
    except KeyError:
        raise ValueError(f"unknown error code {code!r}: add it to feedrouter.errors.TABLE") from None
    return cls(message, code=code, **details)  # type: ignore[arg-type]
