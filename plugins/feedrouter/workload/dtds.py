"""The project's own test DTDs, shipped as package data under ``workload/dtds/``.

* ``BIB`` (``bib.dtd``): a flat bibliography, root ``bib``, not recursive, at most four levels.
* ``BOOK`` (``book.dtd``): one book of nested sections, root ``book``, recursive
  (``section`` in ``section``), mixed content in ``p``.
* ``NEWS`` (``news.dtd``): a small news-wire DTD in the spirit of NITF, root ``nitf``, recursive
  (``block`` in ``block`` and in ``bq``), with internal character entities (``&nbsp;`` ``&mdash;``
  ``&eacute;`` ``&copy;``) and parameter entities.

The constants hold the DTD texts; :func:`load` builds (and caches) their :class:`DtdGraph`.

Example:
    >>> load("book").root, load("book").is_recursive
    ('book', True)
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from feedrouter.schema import DtdGraph

#: Constant name -> file name under ``workload/dtds/``.
FILES: dict[str, str] = {"BIB": "bib.dtd", "BOOK": "book.dtd", "NEWS": "news.dtd"}


def text(name: str) -> str:
    """The text of one project DTD by name, in either case ("bib", "BOOK", "news")."""
    file = FILES[_key(name)]
    return resources.files("feedrouter.workload").joinpath("dtds", file).read_text(encoding="utf-8")


def load(name: str) -> DtdGraph:
    """The graph of one project DTD by name, in either case; built once per process."""
    return _load(_key(name))


#: Older spelling of :func:`load`.
graph = load


@cache
def _load(key: str) -> DtdGraph:
    return DtdGraph.from_text(text(key), source=FILES[key])


def _key(name: str) -> str:
    key = name.upper().removesuffix(".DTD")
    if key not in FILES:
        raise KeyError(f"no project DTD named {name!r}; choose one of {', '.join(FILES)}")
    return key


BIB: str = text("BIB")
BOOK: str = text("BOOK")
NEWS: str = text("NEWS")
