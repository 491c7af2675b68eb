"""The message factory: from the nodes a subscription selected to the bytes it receives.

In, at compile time: a subscription's element constructors (:mod:`feedrouter.lang` AST), compiled
into byte templates with one slot per enclosed path (:mod:`.factory`), for the planner to resolve.
In, per document: a :class:`~feedrouter.output.view.DocumentView` (nodes by id, their serializations,
the slot bytes shared between plans) and, per matched subscription, its bindings and flattened
template. Out: the result bytes, XQuery's serialization (UTF-8, no declaration, no indentation),
assembled within the per-subscription and per-document byte limits. :mod:`.defaults` sets the
attributes a document's internal subset defaults on its parsed tree, so that copies carry them.

This package imports nothing of :mod:`feedrouter.plan`: the planner depends on it, not the reverse.
"""
