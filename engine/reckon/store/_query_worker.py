"""A query worker process (``python -m reckon.store._query_worker``): see
:mod:`reckon.store.query_pool` for the protocol and why it exists.

Before anything else it denies itself Internet sockets (:mod:`reckon.store._sandbox`)
and caps its address space; then it serves requests from stdin, one at a time, on a
large-stack thread.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
from typing import Any, BinaryIO

_HEADER = struct.Struct(">II")  # header length, body length


def write_frame(out: BinaryIO, header: dict[str, Any], body: bytes = b"") -> None:
    h = json.dumps(header).encode()
    out.write(_HEADER.pack(len(h), len(body)) + h + body)
    out.flush()


def read_frame(inp: BinaryIO) -> tuple[dict[str, Any], bytes] | None:
    raw = inp.read(_HEADER.size)
    if len(raw) < _HEADER.size:
        return None
    hl, bl = _HEADER.unpack(raw)
    h = inp.read(hl)
    b = inp.read(bl) if bl else b""
    return json.loads(h), b


def _term_json(t: Any) -> dict[str, Any]:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(t, NamedNode):
        return {"type": "uri", "value": t.value}
    if isinstance(t, BlankNode):
        return {"type": "bnode", "value": t.value}
    if isinstance(t, Literal):
        out: dict[str, Any] = {"type": "literal", "value": t.value}
        if t.language:
            out["xml:lang"] = t.language
            d = getattr(t, "direction", None)
            if d is not None:
                out["its:dir"] = str(d).rsplit(".", 1)[-1].lower()
        elif t.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            out["datatype"] = t.datatype.value
        return out
    return {"type": "triple", "value": {"subject": _term_json(t.subject), "predicate": _term_json(t.predicate),
                                        "object": _term_json(t.object)}}


class _Worker:
    def __init__(self) -> None:
        self.stores: dict[tuple[str, str], Any] = {}
        self.cells: dict[str, str] = {}  # N-Triples term -> its SPARQL JSON (terms repeat across rows)

    def store(self, path: str, incarnation: str) -> Any:
        from reckon.store.tenant_store import TenantStore

        key = (path, incarnation)
        ts = self.stores.get(key)
        if ts is None:
            for old in [k for k in self.stores if k[0] == path]:  # a deleted incarnation
                self.stores.pop(old).close()
            ts = TenantStore(path, linger=0, mirror="memory")  # evaluates outside the lock: a copy
            if ts.incarnation != incarnation:
                from reckon._errors import TenantGone

                raise TenantGone(f"tenant at {path} is another incarnation than the caller's")
            if len(self.stores) >= 8:  # bounded: drop the oldest mirror
                old = next(iter(self.stores))
                self.stores.pop(old).close()
            self.stores[key] = ts
        return ts

    def query(self, req: dict[str, Any], body: bytes = b"") -> tuple[dict[str, Any], bytes]:
        from reckon._errors import InvalidInput, ReckonError

        try:
            return self._query(req, body)
        except ReckonError:
            raise
        except PermissionError as e:  # the sandbox refused a socket: SERVICE reached evaluation
            raise InvalidInput(f"SPARQL query failed: network access is disabled for queries ({e})",
                               field="query") from e
        except (OSError, RuntimeError, ValueError) as e:
            raise InvalidInput(f"SPARQL query failed: {e}", field="query") from e

    def _query(self, req: dict[str, Any], body: bytes = b"") -> tuple[dict[str, Any], bytes]:
        from pyoxigraph import QueryBoolean, QuerySolutions, RdfFormat, serialize

        from reckon._errors import QueryLimitExceeded
        from reckon.store.query_guard import QueryPlan
        from reckon.store.tenant_store import evaluate_plan

        ts = self.store(req["path"], req["incarnation"])
        gen = None
        if req.get("mirror"):
            gen = ts.install_mirror(int(req["target"]), body)
        elif req.get("texts") is not None and req.get("since") is not None:
            gen = ts.advance_mirror(req["since"], req["texts"])
        if gen is None or (req.get("target") is not None and gen < req["target"]):
            mirror, gen = ts.query_mirror()  # shared lock only while syncing
        else:
            mirror = ts._st.mirror
        plan = QueryPlan(text=req["text"], form=req["form"], from_graphs=tuple(req["from_graphs"]),
                         from_named=tuple(req["from_named"]), has_dataset=req["has_dataset"])
        max_rows = req.get("max_rows")
        max_bytes = req.get("max_result_bytes")
        result = evaluate_plan(mirror, plan, union=req["union"])
        if isinstance(result, QueryBoolean):
            return {"ok": True, "form": "ask", "boolean": bool(result), "gen": gen}, b""

        def too_many(n: int) -> QueryLimitExceeded:
            return QueryLimitExceeded(f"the result has more than {max_rows} rows; add LIMIT (or narrow the query)",
                                      limit="rows", value=max_rows)

        def too_big() -> QueryLimitExceeded:
            return QueryLimitExceeded(f"the result is larger than {max_bytes} bytes; add LIMIT or select fewer "
                                      "or shorter values", limit="result_bytes", value=max_bytes)

        if isinstance(result, QuerySolutions):
            names = [v.value for v in result.variables]
            keys = [json.dumps(name) + ":" for name in names]
            cache = self.cells
            if len(cache) > 200_000:
                cache.clear()
            parts: list[str] = []
            size = 0
            for n, sol in enumerate(result):
                if max_rows is not None and n >= max_rows:
                    raise too_many(n)
                cells = []
                for key, name in zip(keys, names):
                    t = sol[name]
                    if t is not None:
                        nt = str(t)  # N-Triples form: one key per term
                        enc = cache.get(nt)
                        if enc is None:
                            enc = cache[nt] = json.dumps(_term_json(t), ensure_ascii=False)
                        cells.append(key + enc)
                text = "{" + ",".join(cells) + "}"
                size += len(text)
                if max_bytes is not None and size > max_bytes:
                    raise too_big()
                parts.append(text)
            body = ('{"head":{"vars":' + json.dumps(names) + '},"results":{"bindings":['
                    + ",".join(parts) + "]}}").encode()
            return {"ok": True, "form": "select", "vars": names, "rows": len(parts), "gen": gen}, body
        triples = []
        size = 0
        for n, t in enumerate(result):
            if max_rows is not None and n >= max_rows:
                raise too_many(n)
            size += len(str(t)) + 3
            if max_bytes is not None and size > max_bytes:
                raise too_big()
            triples.append(t)
        body = serialize(triples, format=RdfFormat.N_TRIPLES) or b""
        return {"ok": True, "form": "graph", "rows": len(triples), "gen": gen}, body


def _error_header(exc: BaseException) -> dict[str, Any]:
    from reckon._errors import QueryLimitExceeded, ReckonError

    if isinstance(exc, ReckonError):
        h: dict[str, Any] = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, QueryLimitExceeded):
            h["limit"], h["value"] = exc.limit, exc.value
        return h
    if isinstance(exc, MemoryError):
        return {"ok": False, "error": "QueryLimitExceeded", "limit": "resources", "value": None,
                "message": "the query needed more memory than a query worker may use"}
    return {"ok": False, "error": "StoreError", "message": f"query worker failed: {type(exc).__name__}: {exc}"}


def main() -> None:
    from reckon.store._sandbox import deny_internet_sockets

    why_not = deny_internet_sockets()
    mem = os.environ.get("RECKON_QUERY_WORKER_MAX_MEMORY")
    if mem:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, (int(mem), int(mem)))
        except (ValueError, OSError):
            pass
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write on the protocol stream
    threading.stack_size(256 << 20)  # the evaluator recurses over the query's algebra
    worker = _Worker()
    write_frame(out, {"ok": True, "hello": True, "sandboxed": why_not is None, "why_not": why_not,
                      "pid": os.getpid()})
    import pyoxigraph  # noqa: F401  (imported after the filter is in place)

    while True:
        frame = read_frame(inp)
        if frame is None:
            return
        req, body = frame
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["r"] = worker.query(req, body)
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                box["r"] = (_error_header(exc), b"")

        t = threading.Thread(target=run, name="reckon-query")
        t.start()
        t.join()
        header, body = box["r"]
        write_frame(out, header, body)


if __name__ == "__main__":
    main()
