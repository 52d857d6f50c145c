"""Locate the files that ship with Reckon: ``ontology/``, ``shapes/``, ``rules/``, ``examples/``.

In a wheel they live in ``reckon/_data/<kind>/`` (hatch ``force-include``); in a source
checkout or editable install they are at the repository root. Nothing is fetched
from the network.
"""

from __future__ import annotations

from pathlib import Path

from reckon._errors import SchemaError

__all__ = ["resource_dir", "resource_path"]

_KINDS = ("ontology", "shapes", "rules", "examples")


def resource_dir(kind: str) -> Path:
    """Directory holding the shipped files of ``kind``.

    :param kind: one of ``"ontology"``, ``"shapes"``, ``"rules"``, ``"examples"``.
    :raises SchemaError: when the kind is unknown or its directory is missing.
    """
    if kind not in _KINDS:
        raise SchemaError(f"unknown resource kind {kind!r}; expected one of {_KINDS}")
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data" / kind, here.parents[1] / kind):
        if candidate.is_dir():
            return candidate
    raise SchemaError(f"shipped {kind}/ directory not found next to {here}")


def resource_path(kind: str, name: str) -> Path:
    """Path of one shipped file, e.g. ``resource_path("rules", "rdfs.srl")``.

    :raises SchemaError: when the file does not exist.
    """
    p = resource_dir(kind) / name
    if not p.is_file():
        raise SchemaError(f"shipped file {kind}/{name} not found")
    return p
