"""The compiled-program cache: a rule program is parsed, checked and compiled once.

Private support for :mod:`reckon.datalog.loader` and :mod:`reckon.datalog.evaluate`.
Loading ``rdfs.srl`` + ``owl2rl.srl`` and materializing a one-triple graph used to cost
~0.25 s, ~95 % of it parsing, stratifying and ``compile()``-ing ~150 generated join plans —
paid by every ``Reasoner``, every CLI call and every process. Three things are cached,
in memory (per process) and on disk (shared by processes):

* **parsed files** — ``loader`` keys a parsed rule file by a digest of its path, format
  and text; the entry is the pickled :class:`~reckon.datalog.model.RuleSet`;
* **checked programs** — ``reckon.schema.program`` keys a tenant's merged, checked rule
  program by a digest of everything its parse reads (module names and order, each rule
  file's path, format, base IRI and text, and the merging code); the entry is the
  pickled ``RuleSet``, stored only after it passed the check, so a fresh process opening
  a tenant neither parses nor checks its stored program again;
* **strata** — the result of :func:`~reckon.datalog.stratify.check_program`, as rule
  indices, keyed by the *program digest* (a digest of the rule set's rules, ``DATA``
  triples and base IRI, as text);
* **plan code** — the code object of each generated plan, keyed by a digest of its
  generated source text (so a cached code object is always the compilation of exactly
  the text the compiler generated: a stale entry cannot run), and static facts of the
  program's rules (which body atoms get semi-naive delta variants).

Every key also holds the *engine fingerprint* (the Reckon version, the Python bytecode
tag and a digest of the sources of ``reckon.datalog``): a different engine never reads
another's entries.

On disk: ``$RECKON_CACHE_DIR`` if set (``off`` or an empty value disables the disk
cache), else ``$XDG_CACHE_HOME/reckon``, else ``~/.cache/reckon``; one directory per
engine fingerprint, one file per entry: a header (magic, fingerprint, SHA-256 of the
payload) and the payload. Writes go to a temporary file in the same
directory and are renamed into place (atomic on POSIX), so concurrent processes never
see half a file; two writers of one entry race harmlessly (same content, or one
process's newer plans win and the other's are compiled again later). An entry that
cannot be read back (truncated, corrupted — any byte changed, so its SHA-256 no longer
matches — or from another format) is ignored and rewritten.
The cache directory belongs to the user, like ``__pycache__``: whoever can write it can
make Reckon run code.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import sys
import tempfile
import threading
from pathlib import Path
from types import CodeType
from typing import Any

__all__ = [
    "ProgramCache", "cache_dir", "fingerprint", "load_checked", "load_parsed", "program_cache", "store_checked",
    "store_parsed",
]

FORMAT = 2
"""Version of the on-disk layout."""

_MAGIC = b"RECKON-CACHE\0"
_lock = threading.Lock()
_fingerprint: str | None = None
_parsed: dict[str, Any] = {}
_programs: dict[str, ProgramCache] = {}


def fingerprint() -> str:
    """Reckon version + Python bytecode tag + digest of the ``reckon.datalog`` sources."""
    global _fingerprint
    if _fingerprint is None:
        import reckon

        h = hashlib.sha256()
        h.update(f"{FORMAT}|{reckon.__version__}|{sys.implementation.cache_tag}|".encode())
        here = Path(__file__).resolve().parent
        for p in sorted(here.glob("*.py")):
            h.update(p.name.encode())
            try:
                h.update(p.read_bytes())
            except OSError:  # pragma: no cover - a module vanished under us
                pass
        _fingerprint = h.hexdigest()
    return _fingerprint


def cache_dir() -> Path | None:
    """The on-disk cache directory of this engine, or ``None`` when disabled."""
    env = os.environ.get("RECKON_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "off", "0", "none"):
            return None
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "reckon"
    return root / f"programs-{fingerprint()[:16]}"


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256(fingerprint().encode())
    for part in parts:
        h.update(b"\0")
        h.update(part.encode() if isinstance(part, str) else part)
    return h.hexdigest()


def _read(name: str) -> bytes | None:
    d = cache_dir()
    if d is None:
        return None
    try:
        data = (d / name).read_bytes()
    except OSError:
        return None
    head = _MAGIC + fingerprint().encode()
    if not data.startswith(head) or len(data) < len(head) + 32:
        return None
    check, payload = data[len(head):len(head) + 32], data[len(head) + 32:]
    if hashlib.sha256(payload).digest() != check:  # truncated, bit-flipped, or half-written by a foreign tool
        return None
    return payload


def _write(name: str, payload: bytes) -> None:
    d = cache_dir()
    if d is None:
        return
    try:
        if not d.is_dir():
            d.mkdir(parents=True, exist_ok=True)
            _prune(d)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + fingerprint().encode() + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, d / name)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:  # a read-only or full cache never fails the evaluation
        return


PRUNE_AFTER = 7 * 24 * 3600.0
"""Seconds after which the cache directory of another engine fingerprint (an older
Reckon, an edited checkout) is deleted when a new one is created."""


def _prune(keep: Path) -> None:
    import shutil
    import time

    now = time.time()
    for other in keep.parent.glob("programs-*"):
        if other == keep:
            continue
        try:
            if now - other.stat().st_mtime > PRUNE_AFTER:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            continue


# -- parsed rule files ----------------------------------------------------------------

def _parsed_key(path: str, fmt: str, text: str) -> str:
    return _digest("parsed", path, fmt, text)


def _load_entry(memo: dict[str, Any], name: str, suffix: str, kind: type | None = None) -> Any | None:
    """The entry ``name`` of the in-memory ``memo``, else unpickled from the disk file
    ``<name>.<suffix>`` (and remembered); ``None`` when it is in neither, or the file is
    damaged (its SHA-256 does not match, it does not unpickle, or it is not a ``kind``)."""
    got = memo.get(name)
    if got is not None:
        return got
    data = _read(f"{name}.{suffix}")
    if data is None:
        return None
    try:
        got = pickle.loads(data)
    except Exception:  # noqa: BLE001 - a corrupted entry is rebuilt
        return None
    if kind is not None and not isinstance(got, kind):
        return None
    memo[name] = got
    return got


def _store_entry(memo: dict[str, Any], name: str, suffix: str, value: Any) -> None:
    """Remember ``value`` as entry ``name`` in ``memo`` and on disk (``<name>.<suffix>``);
    a value that does not pickle is kept in memory only."""
    memo[name] = value
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a rule set that does not pickle is just not cached
        return
    _write(f"{name}.{suffix}", payload)


def load_parsed(path: str, fmt: str, text: str) -> Any | None:
    """The cached RuleSet parsed from ``text`` (file ``path``, format ``fmt``), or ``None``."""
    return _load_entry(_parsed, _parsed_key(path, fmt, text), "parsed")


def store_parsed(path: str, fmt: str, text: str, ruleset: Any) -> None:
    """Remember a parsed rule file (memory and disk)."""
    _store_entry(_parsed, _parsed_key(path, fmt, text), "parsed", ruleset)


# -- checked programs -------------------------------------------------------------------

_checked: dict[str, Any] = {}


def load_checked(key: str) -> Any | None:
    """The cached checked ``RuleSet`` stored under ``key`` by :func:`store_checked`, or
    ``None`` (not cached, disabled, or the entry is damaged: its SHA-256 does not match,
    it does not unpickle, or it is not a ``RuleSet``)."""
    from reckon.datalog.model import RuleSet

    return _load_entry(_checked, _digest("checked", key), "checked", RuleSet)


def store_checked(key: str, ruleset: Any) -> None:
    """Remember a rule program that passed ``check_program`` under ``key`` (memory and disk)."""
    _store_entry(_checked, _digest("checked", key), "checked", ruleset)


# -- programs ---------------------------------------------------------------------------

def program_digest(ruleset: Any) -> str:
    """Digest of a rule set: its rules (as text, locations included: explanations cite
    them), DATA triples and base IRI."""
    return _digest("program", repr(ruleset.rules), repr(ruleset.data), repr(ruleset.base))


class ProgramCache:
    """Strata and plan code objects of one program (see the module docstring)."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self.strata: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None
        self.code: dict[str, CodeType] = {}
        self.static: dict[str, Any] = {}
        self._dirty = False
        self._loaded = False
        self._lock = threading.Lock()

    def _load_disk(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        data = _read(f"{self.digest}.program")
        if data is None:
            return
        try:
            strata, code, static = marshal.loads(data)
            if not isinstance(code, dict) or not all(isinstance(v, CodeType) for v in code.values()):
                return
            if not isinstance(static, dict):
                return
        except Exception:  # noqa: BLE001 - a corrupted entry is rebuilt
            return
        if self.strata is None and strata is not None:
            self.strata = [(tuple(a), tuple(b)) for a, b in strata]
        for k, v in static.items():
            self.static.setdefault(k, v)
        for k, v in code.items():
            self.code.setdefault(k, v)

    def get_strata(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
        with self._lock:
            self._load_disk()
            return self.strata

    def put_strata(self, strata: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
        with self._lock:
            self.strata = strata
            self._dirty = True

    def get_static(self, key: str) -> Any:
        """A cached fact about the program (marshal-able: ints, strings, lists, dicts)."""
        with self._lock:
            self._load_disk()
            return self.static.get(key)

    def put_static(self, key: str, value: Any) -> None:
        with self._lock:
            self.static[key] = value
            self._dirty = True

    def compile(self, src: str, filename: str) -> CodeType:
        """``compile(src, filename, "exec")``, cached by the digest of both."""
        key = hashlib.sha256(f"{filename}\0{src}".encode()).hexdigest()
        with self._lock:
            self._load_disk()
            code = self.code.get(key)
        if code is None:
            code = compile(src, filename, "exec")
            with self._lock:
                self.code[key] = code
                self._dirty = True
        return code

    def save(self) -> None:
        """Write to disk if something new was compiled (merging what another process
        wrote meanwhile)."""
        with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            self._loaded = False
            self._load_disk()  # merge the entries another process may have added
            payload = marshal.dumps((self.strata, dict(self.code), dict(self.static)))
        _write(f"{self.digest}.program", payload)


def program_cache(ruleset: Any) -> ProgramCache:
    """The cache of ``ruleset``'s program (one object per program per process)."""
    digest = program_digest(ruleset)
    with _lock:
        got = _programs.get(digest)
        if got is None:
            got = _programs[digest] = ProgramCache(digest)
        return got


def check_program_cached(ruleset: Any) -> list[Any]:
    """:func:`~reckon.datalog.stratify.check_program`, cached by program digest (only a
    program that passed the check is cached, so a hit needs no check).

    :raises RuleSetInvalid: as ``check_program`` (never from the cache).
    """
    from reckon.datalog.stratify import Stratum, check_program

    rules = ruleset.rules
    pc = program_cache(ruleset)
    cached = pc.get_strata()
    if cached is not None and all(0 <= i < len(rules) for a, b in cached for i in (*a, *b)):
        return [Stratum(tuple(rules[i] for i in a), tuple(rules[i] for i in b)) for a, b in cached]
    strata = check_program(ruleset)
    where = {id(r): i for i, r in enumerate(rules)}
    try:
        pc.put_strata([(tuple(where[id(r)] for r in s.once), tuple(where[id(r)] for r in s.general)) for s in strata])
    except KeyError:  # pragma: no cover - check_program returned rules not in the set
        pass
    return strata
