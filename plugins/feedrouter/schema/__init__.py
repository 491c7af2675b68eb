"""Schema knowledge for feedrouter: the DTD element graph (see :mod:`feedrouter.schema.dtd`)."""

from feedrouter.schema.dtd import (
    AttributeDecl,
    DtdGraph,
    ElementDecl,
    EntityDecl,
    Particle,
    general_entity_declarations,
)

__all__ = [
    "AttributeDecl",
    "DtdGraph",
    "ElementDecl",
    "EntityDecl",
    "Particle",
    "general_entity_declarations",
]
