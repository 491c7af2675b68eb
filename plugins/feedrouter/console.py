"""What the ``feedrouter`` commands print: names made harmless for a terminal, and errors as one
message with their code and what to do, never a traceback.

Every command runs its work inside :func:`reported`. Names and messages come from files, catalogs
and documents that feedrouter does not control, so they are printed through :func:`escape_name` or
:func:`escape_text`: an escape sequence in a subscription id must not rewrite the operator's
terminal. This module imports only click until an error has to be described (the catalog's
SQLAlchemy errors are recognized only when SQLAlchemy is already loaded).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import click

from feedrouter.errors import FeedrouterError, error

# C0 and C1 controls, DEL, the bidirectional overrides and isolates (they reorder what follows on
# screen), and lone surrogates (file names that are not UTF-8; printing them would raise).
_OTHER_UNSAFE = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_IN_NAMES = re.compile(f"[\x00-\x1f{_OTHER_UNSAFE}]")
_UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER_UNSAFE}]")  # keeps tab and line feed


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_name(name: object) -> str:
    """A name (subscription id, file path, feed) as one printable line: every control character,
    line ends included, is shown as ``\\xNN`` or ``\\uNNNN``."""
    return _UNSAFE_IN_NAMES.sub(_escape, str(name))


def escape_text(text: object) -> str:
    """A message that may span lines (an error with its excerpt): line feeds and tabs are kept,
    every other control character is escaped as in :func:`escape_name`."""
    return _UNSAFE_IN_TEXT.sub(_escape, str(text))


def echo(text: object, err: bool = False) -> None:
    """Print a line of text through :func:`escape_text`."""
    click.echo(escape_text(text), err=err)


@contextmanager
def reported() -> Iterator[None]:
    """Turn feedrouter's errors and the usual operational failures into one clean message.

    Raises:
        click.ClickException: for a :class:`FeedrouterError` (its code and message), an
            :class:`OSError` (the file and the reason) and the catalog's database errors (FR402 with
            the host to check, the URL's password hidden); click prints it and exits with 1.
    """
    try:
        yield
    except click.ClickException:
        raise
    except FeedrouterError as exc:
        # a catalog error caused by a lost connection says so: the fix is the database, not the input
        cause = exc.__cause__
        shown = exc
        if isinstance(cause, Exception) and _is_connection_problem(cause):
            shown = catalog_unreachable(cause)
        raise click.ClickException(escape_text(shown)) from exc
    except OSError as exc:
        raise click.ClickException(escape_text(describe_os_error(exc))) from exc
    except Exception as exc:
        described = describe_database_error(exc)
        if described is None:
            raise
        raise click.ClickException(escape_text(described)) from exc


def describe_os_error(exc: OSError) -> str:
    """``PATH: reason`` for a file that cannot be read or written."""
    where = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or type(exc).__name__
    return f"{where}: {reason}" if where else f"{reason} ({exc})"


def describe_database_error(exc: Exception) -> FeedrouterError | None:
    """FR402 for a catalog that cannot be reached, FR401 for a URL SQLAlchemy cannot use; None for
    anything that is not a SQLAlchemy error. Never shows the URL's password."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None:
        return None
    if isinstance(exc, sa_exc.ArgumentError) or _raised_in(exc, "sqlalchemy.engine.url"):
        # its message may quote the whole URL, password included: say only which setting to fix
        return error("FR401", "FEEDROUTER_DATABASE_URL is not a URL SQLAlchemy can use: check its spelling")
    if _is_connection_problem(exc):
        return catalog_unreachable(exc)
    if isinstance(exc, sa_exc.ProgrammingError):
        return error(
            "FR400",
            f"the catalog's tables are missing or out of date ({_reason(exc)}): run `feedrouter db upgrade`",
        )
    if isinstance(exc, sa_exc.SQLAlchemyError):
        return error("FR400", f"the catalog refused the request ({_reason(exc)})")
    return None


def _raised_in(exc: BaseException, module: str) -> bool:
    """Whether the innermost Python frame of ``exc`` belongs to ``module`` (a bad port in a URL is a
    plain ValueError from SQLAlchemy's URL parser)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_globals.get("__name__") == module


def _is_connection_problem(exc: Exception) -> bool:
    """A database error that says the catalog cannot be reached (refused, dropped, timed out)."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    return sa_exc is not None and isinstance(
        exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError
    )


def _reason(exc: Exception) -> str:
    """The driver's message, first line only, with the catalog's password blanked out."""
    reason = str(getattr(exc, "orig", None) or exc).strip().split("\n")[0]
    password = CatalogAddress.configured().password
    return reason.replace(password, "***") if password else reason


def catalog_unreachable(exc: Exception) -> FeedrouterError:
    """FR402: which catalog, the driver's reason (first line, password removed) and what to check."""
    address = CatalogAddress.configured()
    reason = _reason(exc)
    if address.host is None:
        check = (
            f"does the server of {address.database} run (`feedrouter db status`)? "
            "check FEEDROUTER_DATABASE_URL"
        )
    else:
        check = f"is the database at {address.host} running? check FEEDROUTER_DATABASE_URL"
    return error("FR402", f"the catalog {address.url} cannot be reached ({reason}): {check}")


@dataclass(frozen=True)
class CatalogAddress:
    """The configured catalog as messages may show it: the URL with its password hidden,
    ``HOST:PORT`` (None for the embedded server's socket), and the password only to blank it out of
    messages."""

    url: str
    host: str | None
    database: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def configured(cls) -> CatalogAddress:
        """The address of ``FEEDROUTER_DATABASE_URL`` (read here, not through the catalog package,
        which this module must not import: the catalog's commands import it)."""
        configured = os.environ.get("FEEDROUTER_DATABASE_URL", "").strip()
        if configured in ("", "embedded"):
            return cls("the embedded catalog", None, "$FEEDROUTER_HOME/postgres")
        try:
            from sqlalchemy.engine import make_url

            url = make_url(configured)
            host = f"{url.host}:{url.port or 5432}" if url.host else None  # None: a Unix socket
            return cls(url.render_as_string(hide_password=True), host, url.database, url.password)
        except Exception:  # it was usable a moment ago; if not now, name the setting only
            return cls("(FEEDROUTER_DATABASE_URL)", "the configured host")
