"""The runaway guard of one evaluation: the budgets of :class:`~reckon.datalog.evaluate.Limits`.

Private support for :mod:`reckon.datalog.evaluate` and :mod:`reckon.datalog.maintain`.
One :class:`Guard` per reasoner; :meth:`Guard.start` begins a budget at each ``load`` /
``apply``. What is checked, and where:

* **after every round** (:meth:`Guard.after_round`): the derived facts against
  ``max_derived``, the rounds of the stratum against ``max_rounds``, the process's
  resident memory against the byte budget, and the *growth check*: if the next round
  added as many facts as this one, at :data:`BYTES_PER_FACT` each, would the budget
  still hold? If not, evaluation stops now, while the process is healthy;
* **inside a round** (:meth:`Guard.hit`, called by the compiled join loops): a round
  may collect at most :attr:`Guard.cap` new facts — what is left of ``max_derived``
  and of the byte budget at :data:`BYTES_PER_FACT` — so that one rule producing a
  cross product of millions of facts stops within seconds instead of filling memory;
* **when a rule head builds a triple term** (:meth:`Guard.triple_term`): its nesting
  depth, counted from the terms of the data, against ``max_term_depth``.

Every stop raises :class:`~reckon._errors.ResourceLimit` naming the limit, its value,
what was measured and the rule that was deriving; the caller rolls the state back.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NoReturn

from reckon._errors import ResourceLimit
from reckon.datalog import _memory

if TYPE_CHECKING:  # pragma: no cover
    from reckon.datalog._factstore import TermDictionary
    from reckon.datalog.evaluate import Limits

__all__ = ["BYTES_PER_FACT", "DEFAULT_MAX_BYTES", "HEADROOM_SHARE", "MEASURE_EVERY", "Guard"]

MEASURE_EVERY = 0.002
"""Seconds a reading of the process's resident / virtual size stays current for the
checks of one evaluation. Each reading opens ``/proc/self/statm`` (~20-60 µs); a write's
small ``apply`` runs ~10 rounds in ~1 ms, so reading every round cost more than the
rounds. A runaway program grows by at most ~200 MB/s (module docstring of
:mod:`reckon.datalog._memory`), so a 2 ms old reading is off by < 1 MB of a budget of GBs;
a long evaluation still measures every 2 ms."""

HEADROOM_EVERY = 0.5
"""Seconds the measured headroom (available memory, cgroup limit, rlimits: several
files under ``/proc`` and ``/sys``) stays current across evaluations of the process:
what the system can still give changes with other processes, not within a write; it
bounds the budget at :data:`HEADROOM_SHARE` of it."""

_headroom: tuple[float, int | None] = (-1.0, None)  # (perf_counter of the reading, headroom bytes)

BYTES_PER_FACT = 512
"""Resident memory one derived fact costs, all indexes included (measured: 508 bytes per
fact over the LUBM(1) closure with ``rdfs.srl`` + ``owl2rl.srl``, 204k facts, 104 MB)."""

DEFAULT_MAX_BYTES = 4 << 30
"""Most bytes one evaluation may add to the process's resident memory when
``Limits.max_bytes`` is ``None`` (4 GiB: ~8M derived facts at :data:`BYTES_PER_FACT`;
LUBM(10), 2.3M facts, needs ~1.2 GB)."""

HEADROOM_SHARE = 0.75
"""With ``Limits.max_bytes=None`` the budget is also at most this share of the memory
the process can still take when the evaluation starts (available memory, cgroup limit,
``RLIMIT_RSS`` / ``RLIMIT_DATA``); under ``RLIMIT_AS`` (``ulimit -v``) the virtual size
must stay under this share of the limit too."""


class Guard:
    """Budgets of the running evaluation (see the module docstring).

    :ivar cap: most new facts the running round may collect (read by compiled plans).
    """

    __slots__ = ("cap", "depth", "dic", "limits", "max_rss", "max_vm", "rss0", "t_mem", "vm_now", "rss_now")

    def __init__(self, limits: Limits, dic: TermDictionary) -> None:
        self.limits = limits
        self.dic = dic
        self.depth: dict[int, int] = {}
        self.cap = limits.max_derived
        self.rss0 = 0
        self.max_rss: int | None = None
        self.max_vm: int | None = None
        self.t_mem = -1.0  # perf_counter of the last reading of rss_now / vm_now
        self.rss_now = 0
        self.vm_now: int | None = None

    def _measure(self, fresh: bool = False) -> None:
        """Read the resident and virtual size when the last reading is older than
        :data:`MEASURE_EVERY` (or ``fresh``)."""
        now = time.perf_counter()
        if fresh or now - self.t_mem >= MEASURE_EVERY:
            self.rss_now = _memory.rss_bytes()
            self.vm_now = _memory.vm_bytes() if self.max_vm is not None else None
            self.t_mem = time.perf_counter()

    # -- budget -----------------------------------------------------------------

    def start(self) -> None:
        """Begin the budget of one ``load`` / ``apply`` (measures the process now)."""
        global _headroom
        lim = self.limits
        self.rss0 = rss = _memory.rss_bytes()
        if lim.max_bytes is not None:
            self.max_rss = rss + lim.max_bytes
        else:
            grow = DEFAULT_MAX_BYTES
            t0, room = _headroom
            now = time.perf_counter()
            if t0 < 0 or now - t0 >= HEADROOM_EVERY:
                room = _memory.headroom_bytes()
                _headroom = (now, room)
            if room is not None:
                grow = min(grow, int(room * HEADROOM_SHARE))
            self.max_rss = rss + grow
        asl = _memory.address_space_limit()
        self.max_vm = int(asl * HEADROOM_SHARE) if asl is not None and lim.max_bytes is None else asl
        self.rss_now, self.t_mem = rss, time.perf_counter()
        self.vm_now = _memory.vm_bytes() if self.max_vm is not None else None

    def before_round(self, derived: int) -> None:
        """Set :attr:`cap` for the round about to run, given the facts derived so far."""
        cap = self.limits.max_derived - derived
        if self.max_rss is not None:
            self._measure()
            cap = min(cap, (self.max_rss - self.rss_now) // BYTES_PER_FACT)
            if self.max_vm is not None:
                vm = self.vm_now
                if vm is not None:
                    cap = min(cap, (self.max_vm - vm) // BYTES_PER_FACT)
        self.cap = max(cap, 0)

    def after_round(self, derived: int, new: int, rounds: int, culprit: str) -> None:
        """Check the budgets after a round that added ``new`` facts (``derived`` in all,
        ``rounds`` rounds of this stratum so far); then set :attr:`cap` for the next.

        :raises ResourceLimit: when a limit is hit or the next round would overrun the
            byte budget.
        """
        lim = self.limits
        if derived > lim.max_derived:
            raise ResourceLimit(
                f"evaluation stopped: more than max_derived={lim.max_derived} derived facts "
                f"(last growth from rule {culprit})",
                limit="max_derived", value=lim.max_derived, observed=derived, rule=culprit,
            )
        if rounds > lim.max_rounds:
            raise ResourceLimit(
                f"evaluation stopped: more than max_rounds={lim.max_rounds} rounds in one stratum "
                f"(still deriving: rule {culprit})",
                limit="max_rounds", value=lim.max_rounds, observed=rounds, rule=culprit,
            )
        if self.max_rss is not None:
            self._measure()
            rss = self.rss_now
            if rss > self.max_rss:
                self._memory_stop(rss, culprit, "")
            if new and rss + new * BYTES_PER_FACT > self.max_rss:
                self._memory_stop(rss, culprit, f", and a next round as large as this one ({new} facts) would pass the budget")
            if self.max_vm is not None:
                vm = self.vm_now
                if vm is not None and vm + new * BYTES_PER_FACT > self.max_vm:
                    raise ResourceLimit(
                        f"evaluation stopped before exhausting memory: the process's virtual size "
                        f"({vm >> 20} MiB, {new} facts more in the next round) would pass the "
                        f"{self.max_vm >> 20} MiB usable under its address-space limit (RLIMIT_AS) "
                        f"(still deriving: rule {culprit})",
                        limit="max_bytes", value=self.max_vm, observed=vm, rule=culprit,
                    )
        self.before_round(derived)

    def hit(self, rule: str, collected: int) -> NoReturn:
        """Called by a compiled plan when its round collected more than :attr:`cap` facts.

        :raises ResourceLimit: always.
        """
        lim = self.limits
        if self.cap < lim.max_derived and self.max_rss is not None:
            rss = _memory.rss_bytes()
            self._memory_stop(rss, rule, f", and one round collected {collected} new facts, more than the "
                              f"{self.cap} the budget leaves room for at {BYTES_PER_FACT} bytes per fact")
        raise ResourceLimit(
            f"evaluation stopped: more than max_derived={lim.max_derived} derived facts "
            f"(one round of rule {rule} collected {collected} new facts)",
            limit="max_derived", value=lim.max_derived, observed=collected, rule=rule,
        )

    def _memory_stop(self, rss: int, rule: str, why: str) -> NoReturn:
        assert self.max_rss is not None
        budget = self.max_rss - self.rss0
        raise ResourceLimit(
            f"evaluation stopped before exhausting memory: the budget is max_bytes={budget} "
            f"({budget / (1 << 30):.2f} GiB of growth); the evaluation grew the process by "
            f"{(rss - self.rss0) >> 20} MiB to {rss >> 20} MiB{why} (still deriving: rule {rule})",
            limit="max_bytes", value=budget, observed=rss - self.rss0, rule=rule,
        )

    # -- triple terms -------------------------------------------------------------

    def triple_term(self, s: int, p: int, o: int) -> int | None:
        """``TermDictionary.triple_term`` with the nesting depth checked (head triple terms).

        :raises ResourceLimit: when the term would nest deeper than ``max_term_depth``
            levels of triple terms built by rules.
        """
        depth = self.depth
        d = 1 + max(depth.get(s, 0), depth.get(o, 0))
        if d > self.limits.max_term_depth:
            raise ResourceLimit(
                f"evaluation stopped: a rule builds triple terms nested more than "
                f"max_term_depth={self.limits.max_term_depth} levels deep",
                limit="max_term_depth", value=self.limits.max_term_depth, observed=d,
            )
        i = self.dic.triple_term(s, p, o)
        if i is not None and depth.get(i, 0) < d:
            depth[i] = d
        return i
