"""The planner and its plans: everything a subscription checks and selects beyond its paths.

In: each subscription's AST (:mod:`feedrouter.lang`), optionally the feed's DTD graph
(:mod:`feedrouter.schema`). At compile time the planner lowers the AST into path patterns
(:mod:`.patterns`), puts their navigation paths into the engine's shared NFA (which ones is the
PathSharing strategy: F, FW or FWR), optimizes (the claims and rewrite rules of :mod:`.rules`, from
the query or the DTD) and interns what subscriptions share: pattern plans of relational operators
(:mod:`.operators`, :mod:`.shared_join`), whole subscription plans (:mod:`.sharing`) and a selection
index over their constants (:mod:`.index`). Templates come compiled from :mod:`feedrouter.output`.

Per document, over the engine's :class:`~feedrouter.engine.runtime.Matches`, a
:class:`~feedrouter.plan.context.DocumentContext` holds what the plans share for that document
(typed caches, node values, the work budget); the plans bind nodes from the path-tuple streams, by
tree search (:mod:`.search`) or by node sets on recursive documents (:mod:`.nodesets`). Out, to the
message factory: each matched subscription's bound nodes and its flattened template, whose slots
select the items to copy; the context is the :class:`feedrouter.output.view.DocumentView` the
factory reads them through. :mod:`.profile` times the operators by category.
"""
