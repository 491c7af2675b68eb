"""Catalog hardening: canonical prefixes, names that fit a key, bounded texts, feed result limits.

* The prefix checks of ``subscribers.output_prefix``, ``feeds.input_prefix`` and
  ``feeds.quarantine_prefix`` accept only the canonical spelling (feedrouter.storage.uris): no
  ``.``/``..``/empty segment, no query or fragment, no ``%`` escape that decodes to something else.
* ``subscriptions.name`` must fit one key segment once percent-encoded (200 characters), and
  ``subscriptions.query`` holds at most 65,536 characters.
* ``feeds`` gains ``max_result_bytes``, ``max_document_result_bytes`` and ``invalid_documents``.

Rows that break a new check stop the upgrade with a message naming them (fix or delete them, then
upgrade again); nothing is changed behind the user's back.

Mirrors feedrouter.catalog.models as of this revision. Postgres only.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
# Frozen copies of the shapes in feedrouter.catalog.models at this revision.
URI_RE = (
    r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!$&()*+,;=:@._~-]+)*/?"
    r"|file://(/([A-Za-z0-9!$&()*+,;=:@._~-]|(%(2[023579]|3[CEF]|5[B-E]|60|7[B-D])"
    r"|%(C[2-9A-F]|D[0-9A-F])%[89AB][0-9A-F]|%E[0-9A-F](%[89AB][0-9A-F]){2}"
    r"|%F[0-4](%[89AB][0-9A-F]){3}))+)+/?)$"
)
DOT_SEGMENT = r"/\.\.?(/|$)"
MAX_PREFIX_BYTES = 512
MAX_COMPONENT = 200
MAX_QUERY_CHARS = 65536
MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_DOCUMENT_RESULT_BYTES = 256 * 1024 * 1024
# The shapes of revision 0001, put back by the downgrade.
OLD_URI_RE = r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^/]+)*/?|file://(/[^/]+)+/?)$"

#: (table, column, nullable) of every prefix column.
PREFIXES = (
    ("subscribers", "output_prefix", False),
    ("feeds", "input_prefix", False),
    ("feeds", "quarantine_prefix", True),
)


def _scheme(column: str) -> str:
    return (
        f"({column} LIKE 's3://%' OR {column} LIKE 'file:///%') AND {column} NOT LIKE '%..%'"
        f" AND {column} NOT LIKE '%/./%' AND {column} NOT LIKE '%/.' AND {column} NOT LIKE '%?%'"
        f" AND {column} NOT LIKE '%#%' AND replace({column}, '://', '') NOT LIKE '%//%'"
        f" AND length({column}) <= {MAX_PREFIX_BYTES}"
    )


def _shape(column: str) -> str:
    return f"{column} ~ '{URI_RE}' AND {column} !~ '{DOT_SEGMENT}' AND {column} !~ '[[:cntrl:]]'"


def _old_scheme(column: str) -> str:
    return f"({column} LIKE 's3://%' OR {column} LIKE 'file:///%') AND {column} NOT LIKE '%..%'"


def _old_shape(column: str) -> str:
    return f"{column} ~ '{OLD_URI_RE}' AND {column} !~ '[[:cntrl:]]'"


def _encoded_name_length() -> str:
    unsafe = "regexp_replace(name, '[A-Za-z0-9._=-]', '', 'g')"
    return (
        f"length(name) - length({unsafe}) + 3 * octet_length({unsafe})"
        f" + CASE WHEN name LIKE '.%' THEN 2 ELSE 0 END <= {MAX_COMPONENT}"
    )


def _null(column: str, nullable: bool) -> str:
    return f"{column} IS NULL OR " if nullable else ""


def _refuse_violations(table: str, label: str, condition: str, what: str) -> None:
    """Stop with the offending rows named, rather than with Postgres's bare check violation."""
    # The expressions are this file's constants, never user input.
    rows = op.get_bind().execute(
        sa.text(f"SELECT {label} FROM {SCHEMA}.{table} WHERE NOT ({condition}) ORDER BY id LIMIT 10")
    )
    found = [str(row[0]) for row in rows]
    if found:
        raise RuntimeError(
            f"cannot upgrade the catalog to revision {revision}: {table} rows {what}: "
            f"{', '.join(repr(value) for value in found)}; fix or delete them and upgrade again "
            "(see the README's catalog section for the rules)"
        )


def _replace_check(table: str, name: str, sql: str) -> None:
    op.drop_constraint(op.f(f"ck_{table}_{name}"), table, schema=SCHEMA)
    op.create_check_constraint(op.f(f"ck_{table}_{name}"), table, sql, schema=SCHEMA)


def upgrade() -> None:
    for table, column, nullable in PREFIXES:
        null = _null(column, nullable)
        condition = f"{null}({_scheme(column)}) AND ({null}({_shape(column)}))"
        _refuse_violations(table, f"name || ': ' || {column}", condition, f"with a non-canonical {column}")
    _refuse_violations(
        "subscriptions", "name", _encoded_name_length(), f"whose name is over {MAX_COMPONENT} encoded"
    )
    _refuse_violations(
        "subscriptions", "name", f"length(query) <= {MAX_QUERY_CHARS}", "whose query is over 64 KiB"
    )
    for table, column, nullable in PREFIXES:
        _replace_check(table, f"{column}_scheme", f"{_null(column, nullable)}({_scheme(column)})")
        _replace_check(table, f"{column}_shape", f"{_null(column, nullable)}({_shape(column)})")
    op.create_check_constraint(
        op.f("ck_subscriptions_name_encoded_length"), "subscriptions", _encoded_name_length(), schema=SCHEMA
    )
    op.create_check_constraint(
        op.f("ck_subscriptions_query_length"),
        "subscriptions",
        f"length(query) <= {MAX_QUERY_CHARS}",
        schema=SCHEMA,
    )
    _add_feed_settings()


def _add_feed_settings() -> None:
    op.add_column(
        "feeds",
        sa.Column("max_result_bytes", sa.BigInteger(), server_default=str(MAX_RESULT_BYTES), nullable=False),
        schema=SCHEMA,
    )
    op.add_column(
        "feeds",
        sa.Column(
            "max_document_result_bytes",
            sa.BigInteger(),
            server_default=str(MAX_DOCUMENT_RESULT_BYTES),
            nullable=False,
        ),
        schema=SCHEMA,
    )
    op.add_column(
        "feeds",
        sa.Column("invalid_documents", sa.String(length=16), server_default="fallback", nullable=False),
        schema=SCHEMA,
    )
    op.create_check_constraint(
        op.f("ck_feeds_result_limits"),
        "feeds",
        "max_result_bytes > 0 AND max_document_result_bytes > 0",
        schema=SCHEMA,
    )
    op.create_check_constraint(
        op.f("ck_feeds_invalid_documents"),
        "feeds",
        "invalid_documents IN ('fallback', 'quarantine')",
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_constraint(op.f("ck_feeds_invalid_documents"), "feeds", schema=SCHEMA)
    op.drop_constraint(op.f("ck_feeds_result_limits"), "feeds", schema=SCHEMA)
    for column in ("invalid_documents", "max_document_result_bytes", "max_result_bytes"):
        op.drop_column("feeds", column, schema=SCHEMA)
    op.drop_constraint(op.f("ck_subscriptions_query_length"), "subscriptions", schema=SCHEMA)
    op.drop_constraint(op.f("ck_subscriptions_name_encoded_length"), "subscriptions", schema=SCHEMA)
    for table, column, nullable in PREFIXES:
        _replace_check(table, f"{column}_scheme", f"{_null(column, nullable)}({_old_scheme(column)})")
        _replace_check(table, f"{column}_shape", f"{_null(column, nullable)}({_old_shape(column)})")
