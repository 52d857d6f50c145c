"""Child process for the multi-process store tests (run as a script).

usage: python mp_child.py <tenant_dir> <worker> <n_writes> [<mode>]

Each write asserts two quads about ``urn:w:<worker>:<i>`` in one transaction and, once
the transaction returned, prints ``<worker> <i>`` on stdout (flushed): a printed line
is an acknowledged write. mode ``tenant`` writes through an Engine/Tenant (same data
dir) instead of a bare TenantStore.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from pyoxigraph import Literal, NamedNode, Quad  # noqa: E402

from reckon.store import MEMORIES, TenantStore  # noqa: E402
from tests.store.toy_reasoner import TYPE, ToyReasoner  # noqa: E402

LABEL = NamedNode("urn:t:label")


def main() -> None:
    tenant_dir, worker, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = TenantStore(tenant_dir, reasoner_factory=ToyReasoner)
    for i in range(n):
        node = NamedNode(f"urn:w:{worker}:{i}")
        with store.transaction() as txn:
            txn.add(Quad(node, TYPE, NamedNode("urn:x:A"), MEMORIES))
            txn.add(Quad(node, LABEL, Literal(f"{worker}-{i}"), MEMORIES))
        sys.stdout.write(f"{worker} {i}\n")
        sys.stdout.flush()
    store.close()


if __name__ == "__main__":
    main()
