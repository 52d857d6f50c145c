"""Move a tenant to another endpoint of the shard map (``reckon tenant move ID --to E``).

Steps (DESIGN.md, "The store": tenants sharded by a tenant -> endpoint map):

1. **export** the tenant (TriG of the asserted graphs and the program, at generation G),
   while it keeps taking writes;
2. **import** it into a staging directory ``tenants/.moving-<id>-<pid>`` whose store is
   on the target (the target's graphs of that id: nothing routes there yet), the inferred
   graph derived from scratch;
3. **verify** the target against the export (RDF dataset isomorphism);
4. **switch**, holding the tenant's write lock (local flock, and the write lease when the
   source is remote): if writes landed since G, export again and re-import (verified);
   then the source copy is deleted (a node still holding it gets ``TenantGone`` and
   reopens through the map), the map names the target, and the staging directory
   replaces the local tenant directory (its API-token records copied to the target:
   :mod:`reckon.store.tokens`). Writes wait -- or
   are refused after their lock timeout -- only during this step;
5. **delete** what is left of the source (the old local directory).

A crash before step 4 leaves the source untouched and a staging copy that the next move
(or ``_sweep_aside``) removes; a crash inside step 4 after the source was deleted leaves
the verified target and a map still naming the source: run the move again with
``--to`` the target to finish (it finds the target holding the tenant).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from reckon._errors import InvalidInput, StoreError
from reckon.store.graphs import PROGRAM
from reckon.store.shards import EMBEDDED, ShardMap, set_placement
from reckon.store.tenant_store import TenantStore, read_export
from reckon.store.tokens import TokenRecords

__all__ = ["move_tenant"]


def move_tenant(data_dir: Path, store: TenantStore, to: str, **open_kwargs: Any) -> TenantStore:
    """Move ``store``'s tenant to endpoint ``to`` (or ``"embedded"``); returns the store
    at its new place (the old object is marked gone).

    :raises InvalidInput: when the tenant is already there or ``to`` is unknown.
    :raises StoreError: when the copy does not verify (nothing switched).
    """
    shards = ShardMap.load(data_dir)
    tenant_id = store.tenant_id
    here = shards.placement(tenant_id) if store.backend.kind != "embedded" else EMBEDDED
    if to == here:
        raise InvalidInput(f"tenant {tenant_id!r} already lives on {to!r}", field="to")
    target = None if to == EMBEDDED else shards.endpoint(to)
    export = store.export_trig()
    quads = read_export(export)
    program = [q for q in quads if q.graph_name == PROGRAM]
    asserted = [q for q in quads if q.graph_name != PROGRAM]
    staging = store.path.parent / f".moving-{tenant_id}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    if target is not None:
        stale = target.backend(tenant_id, "legacy")
        if stale.exists():
            stale.destroy()  # a copy left by an interrupted move (the map does not name it)
    factory = store._resolver(program) if store._resolver is not None and program else store._factory  # noqa: SLF001
    new = TenantStore.create(staging, tenant_id, initial=asserted, reasoner_factory=factory, program=program,
                             remote=target, program_resolver=open_kwargs.get("program_resolver"))
    try:
        if not new.verify_export(export):
            raise StoreError(f"tenant {tenant_id!r}: the copy on {to!r} does not match the export; nothing switched")
        new.release()
        with store.exclusive():
            again = store.export_trig()
            if _body(again) != _body(export):  # writes landed meanwhile: copy them too
                new.import_trig(again)
                if not new.verify_export(again):
                    raise StoreError(f"tenant {tenant_id!r}: the copy on {to!r} does not match; nothing switched")
                new.release()
            # the API-token records go with the tenant (reckon.store.tokens)
            source_ep = getattr(store.backend, "endpoint", None) if store.backend.kind != "embedded" else None
            records = TokenRecords(store.path, tenant_id, source_ep).all()
            TokenRecords(staging, tenant_id, target).replace_all(records)
            destroy = getattr(store.backend, "destroy", None)
            if destroy is not None:
                destroy()  # the source copy: every node holding it now gets TenantGone
            set_placement(data_dir, tenant_id, None if to == EMBEDDED else to)
            old = store.path
            grave = old.parent / f".deleting-{tenant_id}-moved-{os.getpid()}"
            os.rename(old, grave)
            new.close()
            os.rename(staging, old)
        store.mark_gone()
        store.close()
        shutil.rmtree(grave, ignore_errors=True)
    except BaseException:
        if staging.exists():
            destroy = getattr(new.backend, "destroy", None)
            new.close()
            if destroy is not None and ShardMap.load(data_dir).placement(tenant_id) != to:
                try:
                    destroy()
                except StoreError:
                    pass
            shutil.rmtree(staging, ignore_errors=True)
        raise
    return TenantStore(old, **open_kwargs)


def _body(export: bytes) -> bytes:
    """The export without its header (the header carries the time and generation)."""
    return b"\n".join(line for line in export.split(b"\n") if not line.startswith(b"# "))
