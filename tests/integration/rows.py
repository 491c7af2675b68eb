"""Catalog rows written the way users write them: plain, parameterized SQL against schema feedrouter."""

from __future__ import annotations

from sqlalchemy import Connection, text

#: A small news DTD with a character entity. (Not the project's NEWS DTD: its parameter entities
#: make the document parser refuse DOCTYPE documents today, FR203 "Entity 'common' not defined".)
WIRE_DTD = """<!ENTITY eacute "&#233;">
<!ELEMENT nitf (head?, body)>
<!ELEMENT head (title?)>
<!ELEMENT title (#PCDATA)>
<!ELEMENT body (body.content?)>
<!ELEMENT body.content (#PCDATA)>
"""
#: A document of the NEWS DTD that uses one of its entities (&eacute;): the feed's DTD must apply.
NEWS_DOCUMENT = (
    b'<!DOCTYPE nitf SYSTEM "nitf.dtd">'
    b"<nitf><head><title>Caf&eacute; prices</title></head><body><body.content/></body></nitf>"
)


def add_dtd(conn: Connection, name: str = "news", dtd: str = WIRE_DTD, root: str = "nitf") -> int:
    return conn.scalar(
        text("INSERT INTO feedrouter.dtds (name, root_element, text) VALUES (:n, :r, :t) RETURNING id"),
        {"n": name, "r": root, "t": dtd},
    )


def add_feed(conn: Connection, name: str, dtd: str | None = None) -> int:
    return conn.scalar(
        text(
            "INSERT INTO feedrouter.feeds (name, input_prefix, dtd_id)"
            " VALUES (:n, :p, (SELECT id FROM feedrouter.dtds WHERE name = :d)) RETURNING id"
        ),
        {"n": name, "p": f"s3://input-bucket/{name}", "d": dtd},
    )


def add_subscriber(conn: Connection, name: str, active: bool = True) -> int:
    return conn.scalar(
        text(
            "INSERT INTO feedrouter.subscribers (name, output_prefix, active)"
            " VALUES (:n, :p, :a) RETURNING id"
        ),
        {"n": name, "p": f"s3://output-bucket/{name}", "a": active},
    )


def add_subscription(
    conn: Connection, subscriber: str, feed: str, name: str, query: str, active: bool = True
) -> int:
    return conn.scalar(
        text(
            "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query, active)"
            " SELECT s.id, f.id, :n, :q, :a FROM feedrouter.subscribers s, feedrouter.feeds f"
            " WHERE s.name = :s AND f.name = :f RETURNING id"
        ),
        {"s": subscriber, "f": feed, "n": name, "q": query, "a": active},
    )


def version(conn: Connection, feed: str) -> int:
    found = conn.scalar(
        text("SELECT version FROM feedrouter.catalog_versions WHERE feed_name = :f"), {"f": feed}
    )
    return int(found or 0)


def subscription(conn: Connection, name: str) -> dict:
    row = conn.execute(text("SELECT * FROM feedrouter.subscriptions WHERE name = :n"), {"n": name}).one()
    return dict(row._mapping)
