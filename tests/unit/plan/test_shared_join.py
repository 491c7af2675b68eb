"""Shared joins: one join per document and signature, outputs handed out without copying."""

from __future__ import annotations

from feedrouter import Router
from feedrouter.engine.runtime import run
from feedrouter.lang.ast import CompOp
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.shared_join import JoinSignature, SharedSelection

DOCUMENT = (
    b"<feed><story id='1'><head><id>7</id><id>9</id></head></story>"
    b"<story id='2'><head><id>9</id></head></story><story id='3'><head/></story></feed>"
)
SUBSCRIPTIONS = {
    "seven": "//story[head/id = 7]",
    "nine": "for $s in //story where $s/head/id = 9 return <s>{ $s }</s>",
    "above": "//story[head/id > 8]",
}


def test_every_constant_of_a_signature_reads_one_join_and_shares_its_lists() -> None:
    router = Router.compile(SUBSCRIPTIONS)
    ctx = DocumentContext(run(router._dfa, router._parser.events(DOCUMENT), 100))
    mains = {sid: router._plans[sid].main for sid in SUBSCRIPTIONS}
    selections = [plan.operators[0] for plan in mains.values()]
    assert all(isinstance(op, SharedSelection) for op in selections)
    assert len({op.signature for op in selections}) == 1  # one signature for the three constants

    outputs = {sid: plan.tuples(ctx) for sid, plan in mains.items()}
    joins = list(ctx.caches.shared_joins)
    assert len(joins) == 1  # built once, for all three
    assert isinstance(joins[0], JoinSignature)
    joined = ctx.caches.shared_joins[joins[0]]
    stories = [t[-1] for t in outputs["nine"]]
    assert [t[-1] for t in outputs["seven"]] == stories[:1]
    assert [t[-1] for t in outputs["above"]] == stories
    # a constant one join node satisfies gets that node's own tuple list, not a copy
    assert outputs["seven"] is joined._left[stories[0]]
    # asking again for a constant returns the same list
    assert joined.output(CompOp.GT, 8.0) is outputs["above"]
