"""A benchmark population: many subscriptions, of which each document matches only a few.

Random subscriptions (:mod:`feedrouter.workload.subscriptions`) match a large share of documents;
routing benchmarks want the opposite, like a real service: thousands of subscribers who each want a
narrow slice. The population here is built from a few **templates** that share their paths, and
subscriptions differ only in an **equality constant** drawn from a larger domain:

    for $v in //book where $v/price = 17 return <r>{ $v/title }</r>
    //book[price = 4]

A template is a (binding element, numeric key) pair: an attribute or ``(#PCDATA)`` child of the
binding element that generated documents fill with numbers 1..MaxValue. With constants drawn
uniformly from 1..V, a document matches a subscription with probability (number of distinct key
values in the document) / V, so V is chosen per template to hit ``target_match_rate``: measured on
sample ``documents`` when given, otherwise assuming one key value per document (V = 1 / rate).
The shared paths are what shared path matching (paper 000) and indexed shared selections (its
section 5) exploit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from lxml import etree

from feedrouter.schema import DtdGraph
from feedrouter.workload.subscriptions import Form, SubscriptionOptions, SubscriptionWriter
from feedrouter.workload.values import attribute_domain, element_domain, is_namespace_attribute


@dataclass(frozen=True)
class Template:
    """Subscriptions ``//element[key = c]`` with ``c`` in 1..domain."""

    element: str
    key: str  # "@attr" or a child element name
    domain: int = 1

    @property
    def path(self) -> str:
        return f"//{self.element}"


def generate_selective_population(
    graph: DtdGraph,
    count: int,
    *,
    seed: int,
    target_match_rate: float = 0.02,
    documents: Sequence[bytes] | None = None,
    templates: int = 3,
    form: Form = "mixed",
) -> list[str]:
    """Generate ``count`` subscriptions of which each document matches about ``target_match_rate``.

    Args:
        graph: the DTD.
        count: how many subscriptions.
        seed: the seed; the same arguments give the same texts.
        target_match_rate: the wanted share of subscriptions a document matches (0 < rate <= 1).
        documents: sample documents (as :func:`generate_documents` makes them) to calibrate the
            constant domains on; without them each document is assumed to hold one key value.
        templates: how many shared (path, key) templates.
        form: "flwr", "filter" or "mixed".

    Raises:
        ValueError: when the DTD has no element with a numeric attribute or text child to key on.
    """
    if not 0 < target_match_rate <= 1:
        raise ValueError(f"target_match_rate must be in (0, 1], not {target_match_rate}")
    rng = random.Random(f"selective:{seed}")
    keys = numeric_keys(graph)
    if not keys:
        raise ValueError(f"{graph.source or 'the DTD'} has no numeric attribute or text child to key on")
    chosen = rng.sample(keys, min(templates, len(keys)))
    calibrated = [_calibrate(graph, t, documents, target_match_rate) for t in chosen]
    writer = SubscriptionWriter(graph, SubscriptionOptions(form=form, RP=(1, 2)), rng)
    return [_subscription(writer, rng.choice(calibrated), form) for _ in range(count)]


def numeric_keys(graph: DtdGraph) -> list[Template]:
    """Every (element, numeric attribute or numeric text child) pair of the DTD, in a stable order."""
    found: list[Template] = []
    for element in sorted(graph.reachable(graph.root) | {graph.root}):
        for attr in sorted(graph.attributes(element)):
            if not is_namespace_attribute(attr) and attribute_domain(graph, element, attr).kind == "number":
                found.append(Template(element, "@" + attr))
        for child in sorted(graph.children(element)):
            if element_domain(graph, child).kind == "number":
                found.append(Template(element, child))
    return found


def _subscription(writer: SubscriptionWriter, template: Template, form: Form) -> str:
    constant = writer.rng.randint(1, template.domain)
    if form == "filter" or (form == "mixed" and writer.rng.random() < 0.5):
        return f"{writer.prolog}{template.path}[{template.key} = {constant}]"
    var = "$v"
    result = writer.result(var, frozenset({template.element}))
    condition = f"{var}/{template.key} = {constant}"
    return f"{writer.prolog}for {var} in {template.path}\nwhere {condition}\nreturn {result}"


def _calibrate(
    graph: DtdGraph, template: Template, documents: Sequence[bytes] | None, rate: float
) -> Template:
    """Choose the constant domain 1..V whose mean per-constant match frequency is nearest ``rate``."""
    if not documents:
        return Template(template.element, template.key, max(1, round(1 / rate)))
    frequency = _value_frequency(graph, template, documents)
    if not frequency:
        return Template(template.element, template.key, max(1, round(1 / rate)))
    top = max(frequency)
    cumulative = [0.0]
    for value in range(1, top + 1):
        cumulative.append(cumulative[-1] + frequency.get(value, 0.0))
    # Past the largest value seen the mean falls as 1/V; below it, pick the best V by search.
    beyond = max(top, round(cumulative[top] / rate))
    best = min(range(1, top + 1), key=lambda v: abs(cumulative[v] / v - rate))
    use_beyond = abs(cumulative[top] / beyond - rate) <= abs(cumulative[best] / best - rate)
    return Template(template.element, template.key, beyond if use_beyond else best)


def _value_frequency(graph: DtdGraph, template: Template, documents: Sequence[bytes]) -> dict[int, float]:
    """Integer key value -> share of the documents in which some key node has it."""
    namespaces = {p: uri for p, uri in graph.namespaces().items() if p}
    query = etree.XPath(f"//{template.element}/{template.key}", namespaces=namespaces)
    counts: dict[int, int] = {}
    for data in documents:
        nodes = query(etree.fromstring(data))
        assert isinstance(nodes, list)  # a path of elements (or an attribute last) selects nodes
        for value in {v for node in nodes if (v := _integer(node)) is not None}:
            counts[value] = counts.get(value, 0) + 1
    return {value: n / len(documents) for value, n in counts.items()}


def _integer(node: object) -> int | None:
    text = node.xpath("string()") if isinstance(node, etree._Element) else node
    try:
        return int(str(text).strip())
    except ValueError:
        return None
