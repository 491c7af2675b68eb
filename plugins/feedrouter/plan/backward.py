"""Backward axes as forward constraints: the x-dag of paper 004 (χαος), in the planner's terms.

χαος matches a path with ``parent``/``ancestor`` steps in one streaming pass by reversing those
edges: "``y`` is an ancestor of ``x``" becomes "``x`` is a descendant of ``y``", so every edge points
down the document and the matching runs with the forward ones. Here every backward step becomes a
forward path of the shared NFA, and the node where two forward paths meet (an x-dag node with two
incoming edges) is joined by its id: :class:`~feedrouter.lang.ast.Member` says "this node is among
the nodes that forward path selects", and its node set comes from the same single run over the
document's events as every other stream (:meth:`DocumentContext.member_set`); nothing walks the tree
upward or reads the document again.

The rewrites, in the order they run (each exact; :data:`RULES` lists them by name):

0. ``upward turn in a condition path``: ``[F/ancestor::x[q]/R]`` after forward steps ``F`` is the
   disjunction of where the node it turns to stands: at or above the context node (a leading
   ``ancestor-or-self``, then rule 2), on a step of ``F``, or between two (below a ``//``):
   ``[.//p/ancestor::sec]`` is ``[.//p and ancestor-or-self::sec or .//sec[.//p]]``;
   ``[a//b/..]`` is ``[a[b] or a//*[b]]``.
1. ``conditions on the parent``: ``S/C[../f]`` is ``S[f]/C`` (every ``C`` child of one ``S`` has
   that parent), and ``for $x in //P/C where $x/../f`` binds ``//P[f]/C``.
2. ``x-dag of a condition path`` starting with backward steps, on a node named ``N``:
   ``[ancestor::story[q]/f]`` is the node being among ``//story[q][f]//N`` (a ``Member``);
   ``ancestor-or-self`` adds the node itself.
3. ``first step from its ancestors``: when that node is a path's first step ``//N``, the forward
   path is the step: ``//p[ancestor::story[q]]`` is ``//story[q]//p``, no join.
4. ``parent of a child`` (paper 003 §3): ``S/x[q]/..`` is ``S[x[q]]``; ``S/x[q]/parent::y`` is
   ``S[self::y][x[q]]``. At the start of a condition path, ``x[q]/../f`` is ``x[q] and f``.
5. ``x-dag of an absolute path`` ``P/b1/…/bk/R`` (``b`` backward): the upper end ``bk::Y[q]``
   becomes the forward step ``//Y[q][d]`` where ``d`` walks back down the reversed edges to the last
   node of ``P`` and requires it to be one of ``P``'s (``Member(P)``); when ``P`` is one ``//`` step
   that requirement is that step itself: ``//p[c]/ancestor::story`` is ``//story[.//p[c]]``. With
   positions (``//p/ancestor::sec[1]``, the nearest ``sec`` of some ``p``) the upper end is
   ``//sec`` among the nodes the steps reach from ``P``'s nodes over the recorded parents
   (``ReachedFrom``), once per document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from feedrouter.lang import ast
from feedrouter.lang.ast import Axis

#: The forward edge a backward step's reversal gives: ``parent`` is ``child``, ``ancestor`` is
#: ``descendant`` (``ancestor-or-self`` too, with the node itself added apart).
_REVERSED = {
    Axis.PARENT: Axis.CHILD,
    Axis.PARENT_NODE: Axis.CHILD,  # the language check keeps '..' off the document node
    Axis.ANCESTOR: Axis.DESCENDANT,
    Axis.ANCESTOR_OR_SELF: Axis.DESCENDANT,
}

Notes = list[str]


def forward(sub: ast.Subscription, notes: Notes) -> ast.Subscription:
    """The subscription with every backward step turned into forward paths and joins."""
    if not _has_backward(sub.body):
        return sub
    body = sub.body
    if isinstance(body, ast.Filter):
        paths = body.path.paths if isinstance(body.path, ast.Union) else (body.path,)
        done = tuple(_absolute(p, notes) for p in paths)
        path = ast.Union(done, body.path.span) if isinstance(body.path, ast.Union) else done[0]
        document = tuple(_document_if(p, notes) for p in paths if _parent_of_the_first(p))
        return replace(sub, body=replace(body, path=path, document_if=document))
    if isinstance(body, ast.JoinFlwr):
        raise TypeError("a join subscription's blocks are made forward one by one")
    binding, where = _where_on_the_parent(body.binding, body.where, notes)
    binding = _absolute(binding, notes)
    name = binding.steps[-1].name
    root = len(binding.steps) == 1  # the bound node may be the root element
    where = tuple(_condition(c, name, notes, root) for c in where)
    return replace(sub, body=replace(body, binding=binding, where=where))


def _parent_of_the_first(path: ast.AbsPath) -> bool:
    """``//a[q]/..``: its ``..`` is the document node when the root element is an ``a``."""
    steps = path.steps
    return len(steps) == 2 and steps[1].axis is Axis.PARENT_NODE and not steps[0].axis.backward


def _document_if(path: ast.AbsPath, notes: Notes) -> ast.AbsPath:
    """The path that selects the root element when ``//a[q]/..`` selects the document node: ``/a[q]``."""
    first = path.steps[0]
    rooted = _absolute(ast.AbsPath((replace(first, axis=Axis.CHILD),)), notes)
    notes.append(f"x-dag: {_text(path)} is also the document node when {_text(rooted)} selects the root")
    return rooted


def forward_relative(path: ast.RelPath, notes: Notes) -> ast.RelPath:
    """A forward relative path (a return or order path below the bound node) with the backward
    steps of its predicates made forward."""
    if not _has_backward(path):
        return path
    steps = _conditions_on_the_parent(path.steps, notes)
    steps = _parents_of_children(tuple(_with_predicates(s, notes) for s in steps), notes)
    return replace(path, steps=steps)


def forward_absolute(path: ast.AbsPath, notes: Notes) -> ast.AbsPath:
    """An absolute path made forward (for the planner's own paths: a return's upper steps)."""
    return _absolute(path, notes) if _has_backward(path) else path


def _has_backward(node: object) -> bool:
    if isinstance(node, ast.Step) and node.axis.backward:
        return True
    if isinstance(node, tuple):
        return any(_has_backward(item) for item in node)
    fields = getattr(node, "__dataclass_fields__", None)
    return fields is not None and any(_has_backward(getattr(node, f)) for f in fields if f != "span")


# -- absolute paths -----------------------------------------------------------------------------------


def _absolute(path: ast.AbsPath, notes: Notes) -> ast.AbsPath:
    steps = _conditions_on_the_parent(path.steps, notes)
    steps = tuple(_with_predicates(s, notes, root=index == 0) for index, s in enumerate(steps))
    steps = _first_step_from_its_ancestors(steps, notes)
    steps = _parents_of_children(steps, notes)
    while (at := next((i for i, s in enumerate(steps) if s.axis.backward), None)) is not None:
        end = next((i for i in range(at, len(steps)) if not steps[i].axis.backward), len(steps))
        prefix = ast.AbsPath(steps[:at])
        top = _upper_end(prefix, steps[at:end])
        notes.append(
            f"x-dag: {_text(ast.AbsPath(steps[:end]))} is {_text(ast.AbsPath((top,)))} "
            "(backward edges reversed, one pass)"
        )
        steps = (top, *steps[end:])
    return replace(path, steps=steps)


def _walked(chain: Sequence[ast.Step]) -> bool:
    """Whether backward steps are walked over the recorded parents rather than reversed into forward
    paths: positions (they count nearest first) or ``ancestor-or-self::`` below the upper end (its
    "or self" would fork every edge below it)."""
    return any(ast.is_positional(p) for s in chain for p in s.predicates) or any(
        s.axis is Axis.ANCESTOR_OR_SELF for s in chain[:-1]
    )


def _upper_end(prefix: ast.AbsPath, chain: tuple[ast.Step, ...]) -> ast.Step:
    """The forward step for the upper end of ``prefix/chain``: ``//Y[q][down to prefix's node]``."""
    if _walked(chain):
        # the nearest sec of some p is no forward path: the steps are walked from prefix's nodes
        reached = ast.ReachedFrom(ast.Member(prefix), up_steps(chain, []))
        return ast.Step(Axis.DESCENDANT, chain[-1].name, (reached,), chain[-1].span)
    last = prefix.steps[-1]
    if len(prefix.steps) == 1 and last.axis is Axis.DESCENDANT:
        bottom = ast.Step(_REVERSED[chain[0].axis], last.name, last.predicates, last.span)
    else:  # the x-dag node where P's path and the reversed edges meet: joined on its id
        bottom = ast.Step(_REVERSED[chain[0].axis], last.name, (ast.Member(prefix),), last.span)
    down = _down(chain, bottom)
    top = chain[-1]
    below = ast.Exists(ast.RelPath(down))
    if top.axis is Axis.ANCESTOR_OR_SELF:  # or the node below is the upper end itself
        below_self = _itself(chain, bottom)
        return ast.Step(Axis.DESCENDANT, top.name, (*top.predicates, ast.Or((below, below_self))), top.span)
    return ast.Step(Axis.DESCENDANT, top.name, (*top.predicates, below), top.span)


def _down(chain: tuple[ast.Step, ...], bottom: ast.Step) -> tuple[ast.Step, ...]:
    """The reversed edges from the upper end of ``chain`` down to ``bottom``: each step below the top
    keeps its name test and predicates and takes the axis its upper neighbour reverses to."""
    down = [bottom]
    for index in range(len(chain) - 1):
        step, above = chain[index], chain[index + 1]
        down.insert(0, ast.Step(_REVERSED[above.axis], step.name, step.predicates, step.span))
    return tuple(down)


def _itself(chain: tuple[ast.Step, ...], bottom: ast.Step) -> ast.Condition:
    """``ancestor-or-self::Y`` at the top of ``chain``, taken as ``self``: the upper end is the node
    below it, which must pass that node's tests and continue down from there."""
    down = _down(chain[:-1], bottom) if len(chain) > 1 else (bottom,)
    first, rest = down[0], down[1:]
    terms: list[ast.Condition] = [] if first.name is None else [ast.SelfTest(first.name)]
    terms += first.predicates
    if rest:
        terms.append(ast.Exists(ast.RelPath(rest)))
    return terms[0] if len(terms) == 1 else ast.And(tuple(terms))


# -- conditions -----------------------------------------------------------------------------------------


def _with_predicates(step: ast.Step, notes: Notes, root: bool = False) -> ast.Step:
    """``root``: the step's nodes may be the root element (the first step of an absolute path)."""
    if not step.predicates:
        return step
    found = tuple(_condition(c, step.name, notes, root) for c in step.predicates)
    return replace(step, predicates=found)


def _condition(
    condition: ast.Condition, name: ast.QName | None, notes: Notes, root: bool = False
) -> ast.Condition:
    """A condition on a node with name test ``name``, its paths' backward steps made forward;
    ``root``: the node may be the root element, whose ``..`` is the document node."""
    if isinstance(condition, (ast.And, ast.Or)):
        return replace(condition, terms=tuple(_condition(t, name, notes, root) for t in condition.terms))
    if isinstance(condition, ast.Not):
        return replace(condition, operand=_condition(condition.operand, name, notes, root))
    if isinstance(condition, (ast.BooleanCall, ast.CallComparison)):
        return _call_on_the_parent(condition, name, notes)
    if not isinstance(condition, (ast.Comparison, ast.Exists)):
        return condition  # positions and the planner's own tests hold no backward steps
    turned = _turn_upward(condition, notes)
    if turned is not condition:
        return _condition(turned, name, notes, root)
    steps = _conditions_on_the_parent(condition.path.steps, notes)
    steps = tuple(_with_predicates(s, notes) for s in steps)
    guards, steps = _leading_parents_of_children(steps)
    steps = _parents_of_children(steps, notes)
    path = replace(condition.path, steps=steps)
    found = replace(condition, path=path)
    leading = [s for s in steps[: next((i for i, s in enumerate(steps) if not s.axis.backward), len(steps))]]
    if _walked(leading):
        return _joined(guards, _upward_test(found, notes), condition)
    if steps and steps[0].axis.backward:
        member = _member_of_upper_end(found, name, notes)
        if root and not guards and _from_the_document(steps):
            member = _or_the_document(member, found, name)
        return _joined(guards, member, condition)
    return _joined(guards, found, condition)


def _turn_upward(condition: ast.Comparison | ast.Exists, notes: Notes) -> ast.Condition:
    """Rule 0: a condition path that turns upward after forward steps, ``F/b::x[q]/R`` (``b`` an
    ``ancestor``, ``ancestor-or-self``, or a ``parent`` after a ``//`` step), is the disjunction of
    where the node ``y`` it turns to can stand, each a forward path with ``y``'s tests on one of its
    steps: above the context node or on it (a leading ``ancestor-or-self`` step, made forward by
    rule 2), on one of ``F``'s steps, or between two of them (below a ``//``). Exact: ``y`` is an
    ancestor of a node ``F`` reaches, so it lies on the way down from the context node or above it.
    Leading backward steps come first: ``L/F/b/R`` is ``L[F/b/R]``. Other conditions are returned
    unchanged; the rules that follow handle a child's parent."""
    steps = condition.path.steps
    turn = _turning_step(steps)
    if turn is None:
        return condition
    lead = next(i for i, s in enumerate(steps) if not s.axis.backward)
    if lead:  # 'L/F/b/R' is 'L[F/b/R]': the turn is then at the start of a condition on L's node
        inner = replace(condition, path=replace(condition.path, steps=steps[lead:]))
        upper = replace(steps[lead - 1], predicates=(*steps[lead - 1].predicates, inner))
        return ast.Exists(ast.RelPath((*steps[: lead - 1], upper)), condition.span)
    forward_steps, up, rest = steps[:turn], steps[turn], steps[turn + 1 :]
    at_y = replace(condition, path=replace(condition.path, steps=rest))
    named = (ast.SelfTest(up.name),) if up.name is not None else ()
    y_tests = (*named, *up.predicates, *_unless_trivial(at_y))
    if up.axis in (Axis.PARENT, Axis.PARENT_NODE):
        terms = _parents_of_a_descendant(forward_steps, y_tests)
    else:
        terms = _ancestors_on_the_way(forward_steps, up, y_tests, at_y)
    found = terms[0] if len(terms) == 1 else ast.Or(tuple(terms), condition.span)
    notes.append(f"rewrite: [{_condition_text(condition)}] is [{_condition_text(found)}]")
    return found


def _turning_step(steps: tuple[ast.Step, ...]) -> int | None:
    """The index of the first backward step after a forward one that rule 0 takes (no positions,
    not a child step's parent, which rule 1 folds); None if there is none."""
    for index in range(1, len(steps)):
        step, before = steps[index], steps[index - 1]
        if not step.axis.backward or before.axis.backward:
            continue
        if any(ast.is_positional(p) for p in step.predicates):
            return None  # the language check refuses these
        if step.axis in (Axis.PARENT, Axis.PARENT_NODE) and before.axis is Axis.CHILD:
            return None
        return index
    return None


def _path_with(steps: Sequence[ast.Step], tests: Sequence[ast.Condition]) -> ast.Condition:
    """``steps`` as a condition, with ``tests`` on the last step (on the context node if none)."""
    if not steps:
        return tests[0] if len(tests) == 1 else ast.And(tuple(tests)) if tests else ast.Exists(ast.RelPath())
    last = replace(steps[-1], predicates=(*steps[-1].predicates, *tests))
    return ast.Exists(ast.RelPath((*steps[:-1], last)))


def _rest_below(steps: Sequence[ast.Step]) -> tuple[ast.Condition, ...]:
    return (ast.Exists(ast.RelPath(tuple(steps))),) if steps else ()


def _parents_of_a_descendant(
    forward_steps: tuple[ast.Step, ...], y_tests: tuple[ast.Condition, ...]
) -> list[ast.Condition]:
    """``F//n[p]/parent::x[q]``: the parent is the node before the ``//`` step (with an ``n[p]``
    child) or any element below it with one."""
    *before, last = forward_steps
    child = (ast.Exists(ast.RelPath((replace(last, axis=Axis.CHILD),))),)
    on_the_node = _path_with(before, (*y_tests, *child))
    name = y_tests[0].name if y_tests and isinstance(y_tests[0], ast.SelfTest) else None
    other = y_tests[1:] if name is not None else y_tests
    below = ast.Step(Axis.DESCENDANT, name, (*child, *other))
    return [on_the_node, _path_with((*before, below), ())]


def _ancestors_on_the_way(
    forward_steps: tuple[ast.Step, ...],
    up: ast.Step,
    y_tests: tuple[ast.Condition, ...],
    at_y: ast.Comparison | ast.Exists,
) -> list[ast.Condition]:
    """``F/ancestor::x[q]/R`` (or ``ancestor-or-self``): ``y`` above or at the context node, on a
    step of ``F`` before the last (at the last too with ``-or-self``), or between the node before a
    ``//`` step and that step's node."""
    above = replace(up, axis=Axis.ANCESTOR_OR_SELF)
    from_above = replace(at_y, path=replace(at_y.path, steps=(above, *at_y.path.steps)))
    terms: list[ast.Condition] = [ast.And((ast.Exists(ast.RelPath(forward_steps)), from_above))]
    name = up.name
    other = y_tests[1:] if name is not None else y_tests
    last = len(forward_steps) - 1
    for index, step in enumerate(forward_steps):
        before, after = forward_steps[:index], forward_steps[index + 1 :]
        if step.axis is Axis.DESCENDANT:  # y strictly between the node before and this step's node
            between = ast.Step(Axis.DESCENDANT, name, (*other, ast.Exists(ast.RelPath((step, *after)))))
            terms.append(_path_with((*before, between), ()))
        if index < last or up.axis is Axis.ANCESTOR_OR_SELF:  # y is this step's node
            terms.append(_path_with((*before, step), (*y_tests, *_rest_below(after))))
    return terms


def _call_on_the_parent(
    condition: ast.BooleanCall | ast.CallComparison, name: ast.QName | None, notes: Notes
) -> ast.Condition:
    """``contains(../title, "x")`` on a node named ``N``: the parent's ``contains(title, "x")``, so the
    node is among ``//*[contains(title, "x")]/N`` (the language check allows one leading parent
    step in a function argument: the parent is one node, so the call's cardinality is kept)."""
    call = condition.call
    while isinstance(call.arg, ast.Call):
        call = call.arg
    arg = call.arg
    if not isinstance(arg, ast.RelPath) or not arg.steps or not arg.steps[0].axis.backward:
        return condition
    parent = arg.steps[0]
    moved = _replace_argument(condition, replace(arg, steps=arg.steps[1:]))
    tests: list[ast.Condition] = [*parent.predicates, moved]
    top = ast.Step(Axis.DESCENDANT, parent.name, tuple(tests))
    member = ast.Member(ast.AbsPath((top, ast.Step(Axis.CHILD, name))), condition.span)
    notes.append(f"x-dag: [{_condition_text(condition)}] is membership in {_text(member.path)} (one pass)")
    return member


def _call_moved_up(condition: ast.BooleanCall | ast.CallComparison) -> ast.Condition | None:
    """``contains(../title, "x")`` as the parent's ``contains(title, "x")`` (with ``parent::y``'s
    name and predicates); None when the call's argument does not start with a parent step."""
    call = condition.call
    while isinstance(call.arg, ast.Call):
        call = call.arg
    arg = call.arg
    if not isinstance(arg, ast.RelPath) or not arg.steps:
        return None
    parent = arg.steps[0]
    if parent.axis not in (Axis.PARENT, Axis.PARENT_NODE) or any(
        ast.is_positional(p) for p in parent.predicates
    ):
        return None
    tests: list[ast.Condition] = [ast.SelfTest(parent.name)] if parent.name is not None else []
    tests += [*parent.predicates, _replace_argument(condition, replace(arg, steps=arg.steps[1:]))]
    return tests[0] if len(tests) == 1 else ast.And(tuple(tests), condition.span)


def _replace_argument(
    condition: ast.BooleanCall | ast.CallComparison, arg: ast.RelPath
) -> ast.BooleanCall | ast.CallComparison:
    """The condition with its innermost call's argument replaced."""

    def swapped(call: ast.Call) -> ast.Call:
        if isinstance(call.arg, ast.Call):
            return replace(call, arg=swapped(call.arg))
        return replace(call, arg=arg)

    return replace(condition, call=swapped(condition.call))


def _from_the_document(steps: tuple[ast.Step, ...]) -> bool:
    """``../f`` with ``f`` forward: on the root element, ``..`` is the document node."""
    return (
        steps[0].axis is Axis.PARENT_NODE
        and not steps[0].predicates
        and not any(s.axis.backward for s in steps[1:])
    )


def _or_the_document(
    member: ast.Condition, condition: ast.Comparison | ast.Exists, name: ast.QName | None
) -> ast.Condition:
    """``[../f]`` on a node that may be the root element: the x-dag's answer for a parent element, or
    the node is the root (``/N``) and ``f`` holds from the document node, which is ``f`` read from the
    root with its first step turned onto the root itself (``x`` is ``self::x``, ``//x`` is
    ``descendant-or-self::x``)."""
    is_root = ast.Member(ast.AbsPath((ast.Step(Axis.CHILD, name),)))
    rest = condition.path.steps[1:]
    if not rest:  # the document node itself: it exists, and its string value is the root's
        if condition.path.tail is not None:
            return member  # it has no attributes or text children
        here = replace(condition, path=ast.RelPath())
        return ast.Or((member, ast.And((is_root, *_unless_trivial(here)))))
    first, below = rest[0], replace(condition, path=replace(condition.path, steps=rest[1:]))
    tests: list[ast.Condition] = [ast.SelfTest(first.name)] if first.name is not None else []
    tests += [*first.predicates, *_unless_trivial(below)]
    on_root: ast.Condition = ast.And(tuple(tests)) if tests else ast.Exists(ast.RelPath())
    if first.axis is Axis.DESCENDANT:  # or below the root
        deeper = replace(condition, path=replace(condition.path, steps=rest))
        on_root = ast.Or((on_root, deeper))
    return ast.Or((member, ast.And((is_root, on_root))))


def _joined(
    guards: tuple[ast.Condition, ...], found: ast.Condition, condition: ast.Condition
) -> ast.Condition:
    if guards and isinstance(found, (ast.Comparison, ast.Exists)):
        terms = (*guards, *_unless_trivial(found))  # 'x/..' alone: the rest is '.', always there
    else:
        terms = (*guards, found)
    return terms[0] if len(terms) == 1 else ast.And(terms, condition.span)


def _member_of_upper_end(
    condition: ast.Comparison | ast.Exists, name: ast.QName | None, notes: Notes
) -> ast.Condition:
    """``[chain/f …]`` on a node named ``name``: the node is among ``//Y[q][f …]/…/name``."""
    steps = condition.path.steps
    end = next((i for i, s in enumerate(steps) if not s.axis.backward), len(steps))
    chain, rest = steps[:end], steps[end:]
    remainder = replace(condition, path=replace(condition.path, steps=rest))
    upper = chain[-1]
    top_tests: tuple[ast.Condition, ...] = (*upper.predicates, *_unless_trivial(remainder))
    bottom = ast.Step(_REVERSED[chain[0].axis], name, ())
    down = _down(chain, bottom)
    top = ast.Step(Axis.DESCENDANT, upper.name, top_tests, upper.span)
    member = ast.Member(ast.AbsPath((top, *down)), condition.span)
    notes.append(f"x-dag: [{_condition_text(condition)}] is membership in {_text(member.path)} (one pass)")
    if upper.axis is not Axis.ANCESTOR_OR_SELF:
        return member
    if len(chain) > 1:  # or the upper end is the node the steps below it reach first
        itself: ast.Condition = ast.Member(ast.AbsPath((top, *_down(chain[:-1], bottom))))
    else:  # or the upper end is the node itself
        tests: list[ast.Condition] = [ast.SelfTest(upper.name)] if upper.name is not None else []
        tests += [*upper.predicates, *_unless_trivial(remainder)]
        itself = ast.And(tuple(tests)) if len(tests) > 1 else tests[0] if tests else ast.Exists(ast.RelPath())
    return ast.Or((member, itself), condition.span)


def _unless_trivial(condition: ast.Comparison | ast.Exists) -> tuple[ast.Condition, ...]:
    """The condition left on the upper end; nothing for ``.`` (which always exists)."""
    if isinstance(condition, ast.Exists) and not condition.path.steps and condition.path.tail is None:
        return ()
    return (condition,)


def _conditions_on_the_parent(steps: tuple[ast.Step, ...], notes: Notes) -> tuple[ast.Step, ...]:
    """Rule 2: a predicate of a child step that starts at its parent is a predicate of the step
    before: ``S/C[../F]`` is ``S[F]/C`` and ``S/C[parent::y[q]/F]`` is ``S[self::y][q][F]/C``, exact
    whatever the other predicates of ``C`` (all ``C`` children of one ``S`` share that parent)."""
    out = list(steps)
    for index in range(1, len(out)):
        step, before = out[index], out[index - 1]
        if step.axis is not Axis.CHILD or before.axis.backward:
            continue
        lifted = [_on_the_parent(c) for c in step.predicates]
        moved = tuple(found for found in lifted if found is not None)
        if not moved:
            continue
        kept = tuple(c for c, found in zip(step.predicates, lifted, strict=True) if found is None)
        out[index - 1] = replace(before, predicates=(*before.predicates, *moved))
        out[index] = replace(step, predicates=kept)
        after = _text(ast.AbsPath(tuple(out[index - 1 : index + 1])))
        notes.append(f"rewrite: {_text(ast.AbsPath((before, step)))} is {after}")
    return tuple(out)


def _first_step_from_its_ancestors(steps: tuple[ast.Step, ...], notes: Notes) -> tuple[ast.Step, ...]:
    """Rule 3b: ``//D[ancestor::A[c]]/R`` is ``//A[c]//D/R``: when the first step of an absolute path
    is ``//D`` and one of its predicates made it a member of a forward path ending in ``D`` (with no
    tests there), that path is the step. Exact whatever ``D``'s other predicates: siblings have the
    same ancestors, so a position among them counts the same nodes."""
    if not steps or steps[0].axis is not Axis.DESCENDANT:
        return steps
    first = steps[0]
    for condition in first.predicates:
        if not isinstance(condition, ast.Member):
            continue
        bottom = condition.path.steps[-1]
        if bottom.name != first.name or bottom.predicates:
            continue
        rest = tuple(c for c in first.predicates if c is not condition)
        inlined = (*condition.path.steps[:-1], replace(bottom, predicates=rest, span=first.span))
        notes.append(f"rewrite: {_text(ast.AbsPath((first,)))} is {_text(ast.AbsPath(inlined))}")
        return (*inlined, *steps[1:])
    return steps


def _where_on_the_parent(
    binding: ast.AbsPath, where: tuple[ast.Condition, ...], notes: Notes
) -> tuple[ast.AbsPath, tuple[ast.Condition, ...]]:
    """Rule 2 for a where clause: ``for $x in //P/C where $x/../F`` binds ``//P[F]/C``."""
    steps = binding.steps
    if len(steps) < 2 or steps[-1].axis is not Axis.CHILD or steps[-2].axis.backward:
        return binding, where
    lifted = [_on_the_parent(c) for c in where]
    moved = tuple(found for found in lifted if found is not None)
    if not moved:
        return binding, where
    before = steps[-2]
    kept = tuple(c for c, found in zip(where, lifted, strict=True) if found is None)
    parent = replace(before, predicates=(*before.predicates, *moved))
    notes.append(f"rewrite: the where clause's parent conditions go to {_text(ast.AbsPath((parent,)))}")
    return replace(binding, steps=(*steps[:-2], parent, steps[-1])), kept


def _on_the_parent(condition: ast.Condition) -> ast.Condition | None:
    """A condition whose path starts with one parent step and goes on forward, as a condition on
    that parent; None for any other condition."""
    if isinstance(condition, (ast.BooleanCall, ast.CallComparison)):
        return _call_moved_up(condition)
    if not isinstance(condition, (ast.Comparison, ast.Exists)):
        return None
    steps = condition.path.steps
    if not steps or steps[0].axis not in (Axis.PARENT, Axis.PARENT_NODE):
        return None
    if any(s.axis.backward for s in steps[1:]) or any(ast.is_positional(p) for p in steps[0].predicates):
        return None
    first = steps[0]
    rest = replace(condition, path=replace(condition.path, steps=steps[1:]))
    tests: list[ast.Condition] = [ast.SelfTest(first.name)] if first.name is not None else []
    tests += [*first.predicates, *_unless_trivial(rest)]
    if not tests:
        return ast.Exists(ast.RelPath())
    return tests[0] if len(tests) == 1 else ast.And(tuple(tests), condition.span)


def _leading_parents_of_children(
    steps: tuple[ast.Step, ...],
) -> tuple[tuple[ast.Condition, ...], tuple[ast.Step, ...]]:
    """Rule 1 at the start of a condition path: ``x[q]/../f`` tests ``x[q]`` and goes on with ``f``
    from the same node; ``x[q]/parent::y/f`` adds ``self::y``."""
    guards: list[ast.Condition] = []
    while (
        len(steps) >= 2 and steps[0].axis is Axis.CHILD and steps[1].axis in (Axis.PARENT, Axis.PARENT_NODE)
    ):
        child, parent = steps[0], steps[1]
        if parent.name is not None:
            guards.append(ast.SelfTest(parent.name))
        guards.append(ast.Exists(ast.RelPath((child,))))
        guards += parent.predicates
        steps = steps[2:]
    return tuple(guards), steps


def _parents_of_children(steps: tuple[ast.Step, ...], notes: Notes) -> tuple[ast.Step, ...]:
    """Rule 1 inside a path: ``S/x[q]/..`` is ``S[x[q]]`` and ``S/x[q]/parent::y[r]`` is
    ``S[self::y][x[q]][r]``, exact (the parent of ``S``'s children is ``S``)."""
    out: list[ast.Step] = []
    for step in steps:
        if (
            step.axis in (Axis.PARENT, Axis.PARENT_NODE)
            and len(out) >= 2
            and out[-1].axis is Axis.CHILD
            and not out[-1].axis.backward
            and not out[-2].axis.backward
        ):
            child = out.pop()
            owner = out.pop()
            tests: list[ast.Condition] = [ast.SelfTest(step.name)] if step.name is not None else []
            tests += [ast.Exists(ast.RelPath((child,))), *step.predicates]
            merged = replace(owner, predicates=(*owner.predicates, *tests))
            notes.append(
                f"rewrite: {_text(ast.AbsPath((owner, child, step)))} is {_text(ast.AbsPath((merged,)))}"
            )
            out.append(merged)
        else:
            out.append(step)
    return tuple(out)


def up_steps(chain: tuple[ast.Step, ...], notes: Notes) -> tuple[ast.UpStep, ...]:
    """Backward steps to walk over the recorded parents: each predicate, in order, a position or
    membership in ``//Y[p]`` (the predicate made forward on the step's own name)."""
    steps = []
    for step in chain:
        filters: list[ast.Member | ast.Position] = []
        for predicate in step.predicates:
            if isinstance(predicate, ast.Position):
                filters.append(predicate)
                continue
            forward = _condition(predicate, step.name, notes)
            filters.append(ast.Member(ast.AbsPath((ast.Step(Axis.DESCENDANT, step.name, (forward,)),))))
        steps.append(ast.UpStep(step.axis, step.name, tuple(filters)))
    return tuple(steps)


def _upward_test(condition: ast.Comparison | ast.Exists, notes: Notes) -> ast.Condition:
    """``[ancestor::sec[1]/title = "x"]``: the positions of reverse axes count nearest first, which a
    forward path cannot say; the steps are walked over the recorded parents instead, and the rest of
    the path is the upper node being among ``//sec[title = "x"]``."""
    steps = condition.path.steps
    end = next((i for i, s in enumerate(steps) if not s.axis.backward), len(steps))
    chain, rest = steps[:end], steps[end:]
    remainder = replace(condition, path=replace(condition.path, steps=rest))
    below = None
    if _unless_trivial(remainder):
        top = ast.Step(Axis.DESCENDANT, chain[-1].name, (remainder,))
        below = ast.Member(ast.AbsPath((top,)))
    test = ast.UpwardTest(up_steps(chain, notes), below, condition.span)
    notes.append(f"backward steps with positions: [{_condition_text(condition)}] walks the recorded parents")
    return test


def member_paths(node: object) -> list[ast.AbsPath]:
    """The paths of the :class:`~feedrouter.lang.ast.Member` conditions in a (forwarded) tree."""
    if isinstance(node, ast.Member):
        return [node.path, *member_paths(node.path)]
    if isinstance(node, tuple):
        return [p for item in node for p in member_paths(item)]
    fields = getattr(node, "__dataclass_fields__", None)
    if fields is None:
        return []
    return [p for f in fields if f != "span" for p in member_paths(getattr(node, f))]


# -- text for notes ---------------------------------------------------------------------------------


def _text(path: ast.AbsPath) -> str:
    from feedrouter.lang.printer import to_xquery  # the printer imports the parser: not at load

    return to_xquery(ast.Subscription(ast.Filter(path)))


def _condition_text(condition: ast.Condition) -> str:
    from feedrouter.lang.printer import condition_text

    return condition_text(condition)


#: The rewrites in the order they run (see the module doc); golden fixtures hold each one's cases.
RULES: tuple[tuple[str, Callable[..., object]], ...] = (
    ("upward turn in a condition path", _turn_upward),
    ("conditions on the parent", _conditions_on_the_parent),
    ("x-dag of a condition path", _member_of_upper_end),
    ("first step from its ancestors", _first_step_from_its_ancestors),
    ("parent of a child", _parents_of_children),
    ("x-dag of an absolute path", _upper_end),
)
