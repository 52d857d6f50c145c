"""A dictionary whose entries are made from a stored form on first read.

Used where a restore decodes a large mapping of which the next operation reads a few
entries: the fact store's indexes (:mod:`reckon.datalog._factstore`) and the peer
index's saved groups (:mod:`reckon.memory._peers`). Imports nothing of the package, so
any layer may use it.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LazyDict(dict[K, V], Generic[K, V]):
    """A ``dict`` that holds each entry in a written form (:attr:`raw`, ``key -> written``)
    until it is read, then replaces it by :meth:`_make`'s value.

    With ``placeholders`` (the default) every key of :attr:`raw` stands in the underlying
    dictionary with the value ``None``, so ``in``, ``len`` and iteration over keys answer
    at C speed without making anything; without, construction costs nothing per key and
    the subclass answers ``in``, ``len`` and iteration itself (over both parts).
    ``[]``, ``get``, ``setdefault`` and ``pop`` make the one entry they read;
    ``items``, ``values``, ``copy``, ``==``, ``repr`` and pickling make them all first
    (:meth:`load_all`). Assignment and ``del`` drop the written form.

    A subclass defines :meth:`_make`; it may return ``None`` for an entry that turns out
    empty, which is then removed (such a subclass also overrides ``__contains__`` and
    iteration to make entries first, or a key could be listed that has no value).
    Only Python-level access is supported: C code reading the mapping directly
    (``dict(d)``, ``{**d}``) sees the placeholders; call :meth:`load_all` first."""

    __slots__ = ("raw",)

    def __init__(self, raw: dict[K, Any], *, placeholders: bool = True) -> None:
        """``raw``: key -> written form (never ``None``); kept, not copied, and emptied as
        entries are made."""
        if placeholders:
            super().__init__(dict.fromkeys(raw))  # type: ignore[arg-type]  # placeholders
        self.raw = raw

    def _make(self, key: K, written: Any) -> V | None:
        """The value of ``key`` from its written form (``None``: no entry)."""
        raise NotImplementedError

    def _load(self, key: K) -> V | None:
        value = self._make(key, self.raw.pop(key))
        if value is None:
            dict.pop(self, key, None)
        else:
            dict.__setitem__(self, key, value)
        return value

    def load_all(self) -> None:
        """Make every entry still in its written form."""
        for key in list(self.raw):
            self._load(key)

    def __getitem__(self, key: K) -> V:
        if key in self.raw:
            value = self._load(key)
            if value is None:
                raise KeyError(key)
            return value
        return dict.__getitem__(self, key)

    def get(self, key: K, default: Any = None) -> Any:
        if key in self.raw:
            value = self._load(key)
            return default if value is None else value
        return dict.get(self, key, default)

    def __setitem__(self, key: K, value: V) -> None:
        self.raw.pop(key, None)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: K) -> None:
        if self.raw.pop(key, None) is None or dict.__contains__(self, key):
            dict.__delitem__(self, key)

    def pop(self, key: K, *default: Any) -> Any:
        if key in self.raw:
            self._load(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: K, default: Any = None) -> Any:
        if key in self.raw and (value := self._load(key)) is not None:
            return value
        return dict.setdefault(self, key, default)

    def popitem(self) -> tuple[K, V]:
        self.load_all()
        return dict.popitem(self)

    def items(self) -> Any:
        self.load_all()
        return dict.items(self)

    def values(self) -> Any:
        self.load_all()
        return dict.values(self)

    def copy(self) -> dict[K, V]:
        self.load_all()
        return dict(dict.items(self))

    def update(self, *args: Any, **kw: Any) -> None:
        for key, value in dict(*args, **kw).items():
            self[key] = value

    def __eq__(self, other: object) -> bool:
        self.load_all()
        if isinstance(other, LazyDict):
            other.load_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        self.load_all()
        return dict.__repr__(self)

    def __or__(self, other: Any) -> Any:
        out = self.copy()
        out.update(other)
        return out

    def __ior__(self, other: Any) -> Any:
        self.update(other)
        return self

    def __reduce__(self) -> tuple[object, ...]:
        self.load_all()
        return (dict, (list(dict.items(self)),))
