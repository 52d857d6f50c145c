"""Reader for the W3C SPARQL-RL (SRL) test manifests in ``../shared/conformance/srl-tests``.

The suite (``shacl12-test-suite/tests/sparql-rl/``) has one sub-manifest per area:
``syntax/``, ``wellformed/``, ``stratification/``, ``eval/``, ``eval2/``, ``examples/``.
Each lists its tests in ``mf:entries``; an entry has a type (``srlt:RulesPositiveSyntaxTest``,
``srlt:RulesEvalTest`` ...), an ``mf:name``, an ``mf:action`` (the ``.srl`` file, or for
evaluation tests a node with ``srlt:ruleset`` and ``srlt:data``) and, for evaluation tests,
an ``mf:result``. Files the manifest names but that are absent from our copy (see
``srl-tests/SOURCES.md``, "Known problems") are reported in :attr:`Entry.missing`, never
dropped silently.

Manifests are parsed with rdflib (Turtle), with the manifest's own ``file:`` URI as base.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from rdflib import RDF, Graph, URIRef
from rdflib.collection import Collection

from tests.conftest import shared_path_or_fail_at_collection

__all__ = ["Entry", "MF", "SRLT", "SUBMANIFESTS", "read_manifest", "suite_dir", "entries"]

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
SRLT = "http://www.w3.org/ns/sparql-rl-tests#"
SUBMANIFESTS = ("syntax", "wellformed", "stratification", "eval", "eval2", "examples")


@dataclass(frozen=True)
class Entry:
    """One test of a manifest.

    :ivar name: ``mf:name`` (used as the pytest id), e.g. ``"syntax-data-01.srl"``.
    :ivar type: the full type IRI, e.g. ``http://www.w3.org/ns/sparql-rl-tests#RulesEvalTest``.
    :ivar kind: the type's local name, e.g. ``"RulesEvalTest"``.
    :ivar action: the ``.srl`` file of a syntax / well-formedness / stratification test
        (for an evaluation test, the same as ``ruleset``).
    :ivar ruleset: ``srlt:ruleset`` of an evaluation test.
    :ivar data: ``srlt:data`` files of an evaluation test (usually one).
    :ivar result: ``mf:result`` file (expected inference graph), if any.
    :ivar missing: referenced files that do not exist in our copy.
    :ivar manifest: the manifest file.
    :ivar iri: the entry's IRI in the manifest.
    """

    name: str
    type: str
    kind: str
    action: Path | None
    ruleset: Path | None = None
    data: tuple[Path, ...] = ()
    result: Path | None = None
    missing: tuple[Path, ...] = ()
    manifest: Path = field(default_factory=Path)
    iri: str = ""

    @property
    def positive(self) -> bool:
        """True for ``...Positive...`` and evaluation tests."""
        return "Negative" not in self.kind

    @property
    def runnable(self) -> bool:
        """All referenced files exist."""
        return not self.missing


def suite_dir() -> Path | None:
    """``.../srl-tests/shacl12-test-suite/tests/sparql-rl`` or ``None`` when ``../shared`` is
    absent outside CI (raises in CI: see ``tests/conftest.py``)."""
    return shared_path_or_fail_at_collection("conformance", "srl-tests", "shacl12-test-suite", "tests", "sparql-rl")


def _path(node: object) -> Path | None:
    if not isinstance(node, URIRef):
        return None
    u = urlparse(str(node))
    if u.scheme != "file":
        return None
    return Path(unquote(u.path))


def read_manifest(manifest: Path) -> list[Entry]:
    """Entries of one manifest, in ``mf:entries`` order.

    :param manifest: path of a ``manifest.ttl``.
    :raises FileNotFoundError: when the manifest itself is missing.
    """
    manifest = Path(manifest).resolve()
    g = Graph()
    g.parse(manifest, format="turtle", publicID=manifest.as_uri())
    mf = lambda local: URIRef(MF + local)  # noqa: E731
    srlt = lambda local: URIRef(SRLT + local)  # noqa: E731
    out: list[Entry] = []
    for head in g.objects(None, mf("entries")):
        for e in Collection(g, head):
            types = [str(t) for t in g.objects(e, RDF.type)]
            typ = next((t for t in types if t.startswith(SRLT)), types[0] if types else "")
            name = str(g.value(e, mf("name")) or str(e).rsplit("#", 1)[-1])
            action = g.value(e, mf("action"))
            result = _path(g.value(e, mf("result")))
            ruleset: Path | None = None
            data: tuple[Path, ...] = ()
            act: Path | None
            if action is not None and g.value(action, srlt("ruleset")) is not None:
                ruleset = _path(g.value(action, srlt("ruleset")))
                data = tuple(sorted(p for p in (_path(d) for d in g.objects(action, srlt("data"))) if p is not None))
                act = ruleset
            else:
                act = _path(action)
            referenced = [p for p in (act, *data, result) if p is not None]
            missing = tuple(p for p in referenced if not p.exists())
            out.append(
                Entry(
                    name=name,
                    type=typ,
                    kind=typ.rsplit("#", 1)[-1],
                    action=act,
                    ruleset=ruleset,
                    data=data,
                    result=result,
                    missing=missing,
                    manifest=manifest,
                    iri=str(e),
                )
            )
    return out


def entries(area: str) -> list[Entry]:
    """Entries of one sub-manifest (``"syntax"``, ``"eval"`` ...); ``[]`` when ``../shared``
    is absent outside CI."""
    if area not in SUBMANIFESTS:
        raise ValueError(f"unknown SRL test area {area!r}; expected one of {SUBMANIFESTS}")
    root = suite_dir()
    if root is None:
        return []
    return read_manifest(root / area / "manifest.ttl")
