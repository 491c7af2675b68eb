"""Where backward steps (``..``, ``parent::``, ``ancestor::``, ``ancestor-or-self::``) may stand.

The planner turns them into forward constraints (:mod:`feedrouter.plan.backward`, paper 004's x-dag);
the shapes it turns exactly are checked here, on the parsed tree, so that everything else gets a
positioned error:

* absolute paths (filters, bindings): any backward steps after the first step;
* condition paths (predicates, ``where``): backward steps anywhere, positions only on those at the
  start (``ancestor::sec[1]/title``; ``a//b/ancestor::c[1]`` is refused);
* return and ``order by`` paths: backward steps at the start (``$p/ancestor::story/title``) and a
  child step's parent below the first step (``$s/a/b/../c``, which is ``$s/a[b]/c``);
* none in function-argument paths (FR109).

``..`` is ``parent::node()``: above the root element it selects the document node. A filter that
is exactly ``//a[q]/..`` delivers it (the planner's ``Filter.document_if``), and a condition path
starting with one ``..`` reads the rest from the document node on the root element; elsewhere,
where the node below ``..`` may be the root element (``//a/../b``, ``//a[../../b]``), the text
must say ``parent::*`` (the parent element), and the error says so. Depths here are the least depth a node
can have (the root element is at 1).
"""

from __future__ import annotations

from collections.abc import Iterator

from feedrouter.lang.ast import (
    AbsPath,
    And,
    Axis,
    BooleanCall,
    Call,
    CallComparison,
    Comparison,
    Condition,
    Constructor,
    Enclosed,
    Exists,
    Filter,
    Flwr,
    Items,
    JoinFlwr,
    Not,
    Or,
    RelPath,
    Step,
    Union,
    is_positional,
)

Problem = tuple[str, str, int]  # code, message, offset

_DOCUMENT_NODE = (
    "'..' here can select the document node (the node below it may be the root element), which "
    "feedrouter delivers only from a whole filter '//a/..'; write 'parent::*' for the parent element"
)


def problems(body: Flwr | Filter | JoinFlwr) -> list[Problem]:
    """The backward steps of a parsed subscription that stand where the planner cannot take them."""
    found: list[Problem] = []
    if isinstance(body, JoinFlwr):
        return _join(body)
    if isinstance(body, Filter):
        paths = body.path.paths if isinstance(body.path, Union) else (body.path,)
        for path in paths:
            _absolute(path, found, document_node=_selects_the_document(path))
        return found
    depth = _absolute(body.binding, found)
    for condition in body.where:
        _condition(condition, depth, found)
    for spec in body.order:
        _returned(spec.path, depth, found)
    for result in _result_paths(body):
        _returned(result, depth, found)
    return found


def _join(join: JoinFlwr) -> list[Problem]:
    """Each side as the FLWR that delivers its witnesses; the value joins' and return's paths from
    the side they start from."""
    found: list[Problem] = []
    depths = {}
    for side in (join.left, join.right):
        depths[side.var] = _absolute(side.path, found)
        for condition in side.where:
            _condition(condition, depths[side.var], found)
    for value_join in join.joins:
        for path in (value_join.left, value_join.right):
            _returned(path, depths.get(path.var, 1), found)
    for result in _result_paths(join):
        _returned(result, depths.get(result.var, 1), found)
    return found


def _returned(path: RelPath, depth: int, found: list[Problem]) -> None:
    """A return path may start with backward steps (``$s/../title``), then go forward only."""
    steps = path.steps
    for index, step in enumerate(steps):
        later = step.axis.backward and index and not steps[index - 1].axis.backward
        if later and not _parent_of_a_child(steps, index):
            message = (
                "a return or order path may start with backward steps ('$s/../title') or take a "
                "child step's parent below its first step ('$s/a/b/..'), not other backward steps later"
            )
            found.append(("FR109", message, _offset(step)))
        depth = _after(step, depth, steps[index + 1 : index + 2], found)
        for condition in step.predicates:
            _condition(condition, depth, found)


def _parent_of_a_child(steps: tuple[Step, ...], index: int) -> bool:
    """``S/x/..`` inside a forward part of a return path: the planner folds it into ``S[x]``, which
    needs the step ``S`` (``$s/x/..`` would be ``$s`` itself under a condition)."""
    step = steps[index]
    return (
        step.axis in (Axis.PARENT, Axis.PARENT_NODE)
        and not any(is_positional(p) for p in step.predicates)
        and index >= 2
        and steps[index - 1].axis is Axis.CHILD
        and not steps[index - 2].axis.backward
    )


def _absolute(path: AbsPath, found: list[Problem], document_node: bool = False) -> int:
    """Check an absolute path; the least depth of the nodes it selects. ``document_node``: the path
    is a filter's ``//a/..``, which delivers the document node when the root element is an ``a``."""
    depth = 0
    for index, step in enumerate(path.steps):
        if step.axis.backward and index == 0:
            found.append(
                ("FR109", "a path cannot start with a backward step from the document", _offset(step))
            )
            return 1
        if document_node and index == 1:
            return 1
        depth = _after(step, depth, path.steps[index + 1 : index + 2], found)
        for condition in step.predicates:
            _condition(condition, depth, found)
    return depth


def _selects_the_document(path: AbsPath) -> bool:
    """``//a[q]/..`` as a whole filter path: the parents of the ``a`` elements, and the document node
    when the root element is one (the planner delivers it whole, as XQuery serializes it)."""
    steps = path.steps
    return (
        len(steps) == 2
        and path.tail is None
        and not steps[0].axis.backward
        and steps[1].axis is Axis.PARENT_NODE
        and not steps[1].predicates
    )


def _relative(path: RelPath, depth: int, found: list[Problem]) -> None:
    leading = True
    steps = path.steps
    upward_once = bool(steps) and not any(s.axis.backward for s in steps[1:])
    if upward_once and steps[0].axis is Axis.PARENT_NODE and not steps[0].predicates:
        depth = max(depth, 2)  # '../f' on the root element: the planner reads f from the document
    for index, step in enumerate(steps):
        if step.axis.backward and not leading and any(is_positional(p) for p in step.predicates):
            message = (
                "a position on a backward step after a forward one is not supported "
                "('a//b/ancestor::c[1]'); start the path with the backward steps instead"
            )
            found.append(("FR109", message, _offset(step)))
        leading = leading and step.axis.backward
        depth = _after(step, depth, steps[index + 1 : index + 2], found)
        for condition in step.predicates:
            _condition(condition, depth, found)


def _after(step: Step, depth: int, following: tuple[Step, ...], found: list[Problem]) -> int:
    """The least depth after ``step`` from a node of least depth ``depth``."""
    axis = step.axis
    if axis in (Axis.CHILD, Axis.DESCENDANT):
        return depth + 1
    if axis is Axis.PARENT_NODE and depth <= 1:
        found.append(("FR109", _DOCUMENT_NODE, _offset(step)))
    if axis in (Axis.PARENT, Axis.PARENT_NODE):
        return max(depth - 1, 1)
    return 1  # an ancestor may be the root element


def _condition(condition: Condition, depth: int, found: list[Problem]) -> None:
    if isinstance(condition, (And, Or)):
        for term in condition.terms:
            _condition(term, depth, found)
    elif isinstance(condition, Not):
        _condition(condition.operand, depth, found)
    elif isinstance(condition, (Comparison, Exists)):
        _relative(condition.path, depth, found)
    elif isinstance(condition, (BooleanCall, CallComparison)):
        _call(condition.call, depth, found)


def _call(call: Call, depth: int, found: list[Problem]) -> None:
    arg = call.arg
    if isinstance(arg, Call):
        _call(arg, depth, found)
        return
    if isinstance(arg, AbsPath):
        step = next((s for s in arg.steps if s.axis.backward), None)
        if step is not None:
            message = "backward steps in an absolute function argument are not supported"
            found.append(("FR109", message, _offset(step)))
        return
    steps = arg.steps
    later = next((s for s in steps[1:] if s.axis.backward), None)
    first = steps[0] if steps else None
    if first is not None and first.axis.backward:
        # one parent step, then forward: the call is the parent's (contains(../title, "x"))
        if first.axis not in (Axis.PARENT, Axis.PARENT_NODE) or any(
            is_positional(p) for p in first.predicates
        ):
            later = later or first
        elif first.axis is Axis.PARENT_NODE and depth <= 1:
            found.append(("FR109", _DOCUMENT_NODE, _offset(first)))
    if later is not None:
        message = (
            "in a function argument only one leading parent step is supported ('contains(../title, \"x\")'); "
            "test other backward paths as a condition"
        )
        found.append(("FR109", message, _offset(later)))
        return
    for step in steps:
        for condition in step.predicates:
            _condition(condition, 2, found)


def _result_paths(flwr: Flwr | JoinFlwr) -> Iterator[RelPath]:
    items = flwr.ret.items if isinstance(flwr.ret, Items) else (flwr.ret,)
    for item in items:
        if isinstance(item, RelPath):
            yield item
        else:
            yield from _constructor_paths(item)


def _constructor_paths(ctor: Constructor) -> Iterator[RelPath]:
    for attribute in ctor.attributes:
        for part in attribute.parts:
            if isinstance(part, Enclosed):
                yield from part.paths
    for item in ctor.content:
        if isinstance(item, Constructor):
            yield from _constructor_paths(item)
        elif isinstance(item, Enclosed):
            yield from item.paths


def _offset(step: Step) -> int:
    return step.span.offset if step.span is not None else 0
