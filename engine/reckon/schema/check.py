"""Check a module set before use: the ontology author's "check" step (DESIGN.md, users:
"adds a memory subclass: a class, a shape, optionally a status rule ... a check command;
no Python").

:func:`check_schema` collects every problem instead of stopping at the first:

* errors: a memory class without ``rdfs:label`` / ``rdfs:comment``; a shape whose
  ``sh:targetClass`` or ``sh:class`` names a class the ontology does not declare; a
  property shape whose ``sh:path`` is not a declared property; a rule file that does
  not parse, is not well-formed or cannot be stratified together with the other module
  rules; an ontology node (e.g. ``rk:settings``) that does not conform to the shapes;
  a ``rk:statusTemplate`` / ``rk:lineTemplate`` that does not compile;
* warnings: a property shape without ``sh:message`` (the refusal would not say what to
  do) or without ``sh:name``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reckon._errors import RuleError

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

    from reckon.schema.loader import Schema

__all__ = ["SchemaProblem", "check_schema"]

# rdflib is imported by the functions below (``import reckon.schema`` stays without it)


@dataclass(frozen=True)
class SchemaProblem:
    """One problem of a module set.

    :ivar level: ``"error"`` (the module must not be used) or ``"warning"``.
    :ivar message: what is wrong and where (class, shape or file).
    """

    level: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.message}"


def check_schema(schema: Schema, *, rules: bool = True) -> list[SchemaProblem]:
    """All problems of ``schema`` (errors first, then warnings; each sorted by message).

    :param rules: also load and stratify :attr:`Schema.rule_files` together.
    :returns: an empty list when the module set is fine.
    """
    import rdflib
    from rdflib.namespace import OWL, RDF, RDFS, SH

    property_types = (OWL.ObjectProperty, OWL.DatatypeProperty, OWL.AnnotationProperty, RDF.Property)
    builtin_paths = {RDF.type, RDFS.label, RDFS.comment}
    errors: list[str] = []
    warnings: list[str] = []
    onto, shapes = schema.ontology, schema.shapes

    for cls in schema.memory_classes():
        for pred, what in ((RDFS.label, "rdfs:label"), (RDFS.comment, "rdfs:comment")):
            if onto.value(cls, pred) is None:
                errors.append(f"memory class {schema.qname(cls)} has no {what}")

    for shape, cls in shapes.subject_objects(SH.targetClass):  # type: ignore[assignment]
        if not schema.is_known_class(cls):
            errors.append(f"shape {_name(schema, shape)} targets {schema.qname(cls)}, which the ontology does not declare")
    for ps, cls in shapes.subject_objects(SH["class"]):  # type: ignore[assignment]
        if not schema.is_known_class(cls):
            errors.append(f"property shape on {_path(schema, ps)} uses sh:class {schema.qname(cls)}, which the ontology does not declare")

    declared = {s for t in property_types for s in onto.subjects(RDF.type, t)} | builtin_paths
    for _ps, path in shapes.subject_objects(SH.path):
        if isinstance(path, rdflib.URIRef) and path not in declared:
            errors.append(f"property shape path {schema.qname(path)} is not a property declared in the ontology")
    for ps in set(shapes.objects(None, SH.property)):  # not the inline shapes of sh:or / sh:not
        if (ps, SH.message, None) not in shapes:
            warnings.append(f"property shape on {_path(schema, ps)} has no sh:message")
        if (ps, SH.name, None) not in shapes:
            warnings.append(f"property shape on {_path(schema, ps)} has no sh:name")

    if rules and schema.rule_files:
        from reckon.datalog.loader import load_rules

        try:
            load_rules(*schema.rule_files)
        except RuleError as exc:
            for d in exc.diagnostics:
                errors.append(f"rules: {d}")

    errors.extend(_template_problems(schema))
    errors.extend(_ontology_conformance(schema))
    out = [SchemaProblem("error", m) for m in sorted(set(errors))]
    out += [SchemaProblem("warning", m) for m in sorted(set(warnings))]
    return out


def _template_problems(schema: Schema) -> list[str]:
    """Every ``rk:statusTemplate`` / ``rk:lineTemplate`` must compile (sandboxed Jinja2,
    :mod:`reckon.schema.templates`)."""
    from reckon.schema.loader import RK
    from reckon.schema.templates import template_problems

    templates = {}
    for pred in (RK.statusTemplate, RK.lineTemplate):
        for s, o in schema.ontology.subject_objects(pred):
            templates[schema.qname(s)] = str(o)
    return template_problems(templates)


def _ontology_conformance(schema: Schema) -> list[str]:
    """Nodes of the ontology itself that a shape targets (settings, individuals) must conform."""
    import rdflib
    from rdflib.namespace import RDF, RDFS, SH

    from reckon.schema.validate import validate

    targeted = set(schema.shapes.objects(None, SH.targetClass))
    focus = sorted(
        {
            s
            for cls in targeted
            for s in schema.hierarchy.subjects(RDF.type, cls)
            if isinstance(s, rdflib.URIRef)
        }
        | {
            s
            for cls in targeted
            for sub in schema.hierarchy.subjects(RDFS.subClassOf, cls)
            for s in schema.hierarchy.subjects(RDF.type, sub)
            if isinstance(s, rdflib.URIRef)
        }
    )
    out = []
    for v in validate(schema.ontology, focus, schema=schema):
        if v["severity"] == "Violation":
            out.append(f"ontology node <{v['focus_node']}>: {v['field'] or 'node'} {v['constraint']}: {v['message']}")
    return out


def _name(schema: Schema, node: rdflib.term.Node) -> str:
    import rdflib

    return schema.qname(node) if isinstance(node, rdflib.URIRef) else "(blank node)"


def _path(schema: Schema, ps: rdflib.term.Node) -> str:
    import rdflib
    from rdflib.namespace import SH

    path = schema.shapes.value(ps, SH.path)
    return schema.qname(path) if isinstance(path, rdflib.URIRef) else "(complex path)"
