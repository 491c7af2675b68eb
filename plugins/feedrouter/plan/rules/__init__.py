"""The rewrite rules of the planner (paper 000 §5.1; paper 003 §3), one rule per module, run in order.

A rule is a function ``rule(pattern, context) -> pattern``: it returns the pattern (with its branches)
rewritten into an equivalent one, or the pattern itself when it does not apply, and reports each
rewrite through ``context.note``. :data:`RULES` is their order: wildcards are resolved first, since
they name the context the ``//`` rewrite looks at. A branch's path starts with its parent's prefix,
which a rule rewrites the same way (the rules look only at earlier steps), so the parent's and the
branch's field numbers still agree. What is not a rewrite lives beside this package: the levels and
the context in :mod:`feedrouter.plan.optimize`, the duplicate and ordering claims in
:mod:`feedrouter.plan.claims`, the never-match check in :mod:`feedrouter.plan.never_matches`.

Example:
    >>> from feedrouter.lang import parse
    >>> from feedrouter.plan.optimize import Optimize, RuleContext
    >>> from feedrouter.plan.patterns import absolute_pattern, format_pattern
    >>> from feedrouter.workload import dtds
    >>> context = RuleContext(Optimize.DTD, dtds.load("bib"))
    >>> format_pattern(rewrite(absolute_pattern(parse("/*//price").body.path), context))
    '/bib/book/price'
"""

from __future__ import annotations

from collections.abc import Callable

from feedrouter.plan.optimize import RuleContext
from feedrouter.plan.patterns import PathPattern
from feedrouter.plan.rules.resolve_wildcards import resolve_wildcards
from feedrouter.plan.rules.rewrite_descendants import rewrite_descendants

Rule = Callable[[PathPattern, RuleContext], PathPattern]

#: The rewrite rules in the order they run.
RULES: tuple[Rule, ...] = (resolve_wildcards, rewrite_descendants)


def rewrite(pattern: PathPattern, context: RuleContext, rules: tuple[Rule, ...] = RULES) -> PathPattern:
    """``pattern`` after each of ``rules`` in turn; the rewrites applied are in ``context``."""
    for rule in rules:
        pattern = rule(pattern, context)
    return pattern
