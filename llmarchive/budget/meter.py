"""The meter: one run's entries in the spend ledger, written before and after each call (method §9).

* an answered call is charged from the usage the provider reported
  (input tokens × input price + output tokens × output price);
* before each attempt leaves, a **reservation** at the attempt's worst case
  is made durable (worst-case input tokens — the prompt's UTF-8 bytes plus
  a framing allowance, never fewer than the provider can count — plus
  ``max_tokens`` output tokens).  The charge written when the call is over
  settles the reservations of its attempts; a reservation never settled
  (the process was killed during the call, or between the answer and its
  record) stays charged at its worst case, for good;
* an attempt whose answer never arrived intact (a read timeout, a connection
  cut after sending, a malformed 200) may have been billed and is charged
  at its worst case; an attempt answered with an HTTP error is not billed.

Without ``prices_eur_per_mtok`` in ``budget.json`` every call is charged
its category's flat per-call rate (``basis: "flat_rate"``).  The reference
model is free and never reaches this module.

Every entry of a run — reservation and charge — is written to the month its
:class:`~llmarchive.budget.ladder.Authorization` was judged against, never to
the clock's: a November run resumed on 5 December was let go by November's
pools and is charged to November (method §9.4, one month for money).
"""
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from llmarchive.archive import ArchivePaths, ChainedLog, cut_torn_tail, file_lock, utc_month, utc_now
from llmarchive.budget import earmarks
from llmarchive.budget.config import EPSILON_EUR, PROMPT_FRAMING_TOKENS, Budget, BudgetHalted, eur
from llmarchive.budget.checkpoint import LedgerView, entries_between, read_ledger
from llmarchive.budget.ladder import Authorization
from llmarchive.budget.spend_ledger import CHARGE, RESERVATION, open_reservations
from measure.schema import SCHEMA_VERSION

Request = tuple[str, str, int, int, int]
"""(call_key, session, attempt, prompt_bytes, max_tokens): what :meth:`SpendMeter.reserve` takes, as one request."""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class SpendMeter:
    """The ledger of one run: reservations before each attempt, one charge per call, never two.

    :meth:`reserve` makes an attempt's worst case durable before its request
    leaves (and refuses it, :class:`BudgetHalted`, when that would take the
    pool past its cap — the ceiling is hard); :meth:`charge` charges
    recorded trials from their usage and settles their reservations;
    :meth:`charge_unanswered` settles the attempts of a call that got no
    answer (an HTTP error costs nothing, an attempt of unknown fate its worst
    case).  A recorded trial is charged once, keyed by its call key, so
    charging every trial of a resumed run adds only what a killed run
    recorded but never charged.
    """

    def __init__(self, paths: ArchivePaths, authorization: Authorization, run_id: str, subject: str,
                 model_id: str, budget: Optional[Budget] = None, ledger: Optional[LedgerView] = None) -> None:
        """``ledger``: the view the caller's run start already read (taken over and caught up, not read again)."""
        self.paths = paths
        self.auth = authorization
        self.month = authorization.month or utc_month()   # the one month every entry of this run is written to
        self.run_id = run_id
        self.subject = subject
        self.model_id = model_id
        self.budget = budget
        with file_lock(paths.spend_ledger):
            self._reload(ledger)

    @property
    def priced(self) -> bool:
        return self.budget is not None and self.budget.priced and self.auth.budgeted

    def _reload(self, since: Optional[LedgerView] = None) -> None:
        """Take in the ledger from its checkpoint (:mod:`~llmarchive.budget.checkpoint`): only the entries after it.

        This run's own earlier entries (a resumed run) are read from where its
        first one starts; the running totals of the whole ledger come with the
        checkpoint, so a reservation's ceiling check never re-reads years of entries.
        ``since``, the view the run's start read, is taken over as it is and
        caught up with what was appended after it: a start reads the ledger once.
        """
        cut_torn_tail(self.paths.spend_ledger)
        view = read_ledger(self.paths) if since is None else since
        self.log = ChainedLog.resume(self.paths.spend_ledger, view.last_hash)
        self.tally = view.tally
        self._size = view.offset
        self.keys: set = set()
        self.charge_ids: set = set()
        self.reserved: dict[str, Mapping] = {}
        self.mine: list[dict] = []
        first = self.tally.first_offset.get(self.run_id)
        if first is not None and not view.whole:
            self._note_mine(entries_between(self.paths, first, view))
        self._note_mine(view.tail)
        if since is not None:
            self._fresh()

    def _note_mine(self, entries: Iterable[Mapping]) -> None:
        for e in entries:
            if e.get("run_id") != self.run_id:
                continue
            self.mine.append(e)
            if e.get("record_type", CHARGE) == CHARGE:
                # a charge without the "trial" field predates reservations: it was a recorded trial's
                if e.get("trial", True):
                    self.keys.add(e.get("call_key"))
                if e.get("charge_id"):
                    self.charge_ids.add(e.get("charge_id"))
            elif e.get("record_type") == RESERVATION:
                self.reserved[e["reservation_id"]] = e

    def _tally(self, entries: Iterable[Mapping]) -> None:
        for e in entries:
            self.tally.add(e, self._size)

    def earmarked_by_others(self, month: str) -> dict[str, float]:
        """Per pool, what the live earmarks of other runs still keep back in ``month`` (:mod:`~llmarchive.budget.earmarks`)."""
        live = earmarks.live(self.paths)
        if not live:
            return {}
        return earmarks.earmarked_eur(live, self.tally.committed, month, exclude_run=self.run_id)

    def committed(self, month: str, pool: str, pending: Sequence[Mapping] = (), settling: Sequence[str] = ()) -> float:
        """Charged + open worst case of ``pool`` in ``month`` (with ``pending`` entries not yet written).

        A reservation that ``pending`` (or the charge about to be made, ``settling``) settles is no longer
        open: counting it beside the charge that replaces it would count one call twice.
        """
        settled = set(settling) | {rid for e in pending for rid in e.get("settles") or ()}
        total = self.tally.charged.get((month, pool), 0.0) + self.tally.open_eur(month, pool, settled)
        return total + sum(e.get("cost_eur") or 0.0 for e in pending
                           if e.get("month") == month and e.get("pool", "general") == pool)

    def _fresh(self) -> None:
        """Take in what other runs appended since this meter last wrote, before chaining on (under the lock).

        Only the appended entries are read and checked onto the chain; the whole ledger is read again only
        when the file did not simply grow (:meth:`ChainedLog.catch_up`).
        """
        size = _size(self.paths.spend_ledger)
        if size == self._size:
            return
        appended = self.log.catch_up(self._size) if size > self._size else None
        if appended is None:
            self._reload()
            return
        self._tally(appended)
        self._size = size
        self._note_mine(appended)

    def _append(self, entries: Sequence[Mapping]) -> list[dict]:
        written = self.log.extend(entries)   # one write and fsync for the batch
        self._tally(written)
        self._size = _size(self.paths.spend_ledger)
        self.mine.extend(written)
        return written

    # -- worst cases -----------------------------------------------------------
    def attempt_worst_case(self, prompt_bytes: int, max_tokens: int) -> Optional[float]:
        """Euros one attempt can cost at most (flat rate without prices; None when unbudgeted)."""
        if self.auth.rate_eur_per_call is None:
            return None
        if self.priced:
            return self.budget.attempt_worst_case(prompt_bytes, max_tokens)
        return self.auth.rate_eur_per_call

    def reservation_id(self, call_key: str, session: str, attempt: int) -> str:
        return f"{self.run_id}/{call_key}/{session}/{attempt}"

    def _pool_cap(self, pool: str) -> Optional[float]:
        if self.budget is None or not self.auth.budgeted:
            return None
        return {"general": self.budget.general_pool_eur, "bridge": self.budget.bridge_reserve_eur,
                "heartbeat": self.budget.heartbeat_reserve_eur}[pool]

    def reserve(self, call_key: str, session: str, attempt: int, prompt_bytes: int, max_tokens: int) -> dict:
        """Make one attempt's worst case durable before it is sent; refuse it past the pool's cap."""
        now = utc_now()
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            entry = self._reservation(now, self.month, call_key, session, attempt, prompt_bytes, max_tokens,
                                      self.earmarked_by_others(self.month))
            written = self._append([entry])[0]
            self.reserved[entry["reservation_id"]] = written
            return written

    def reserve_many(self, requests: Sequence[Request]) -> list[Union[dict, BudgetHalted]]:
        """Reserve each request as :meth:`SpendMeter.reserve` would, all under one lock, written at once.

        Each request is checked against the pool's cap with every earlier
        entry of the batch counted (they are tallied as they are made), and
        gets its written entry or the :class:`BudgetHalted` refusing it —
        one refused attempt does not refuse the others.  A write that fails
        raises (nothing of the batch is reserved) and leaves the tallies as
        they were.
        """
        now, month = utc_now(), self.month
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            held = self.earmarked_by_others(month)
            out: list[Union[dict, BudgetHalted]] = []
            entries: list[dict] = []
            for call_key, session, attempt, prompt_bytes, max_tokens in requests:
                try:
                    entry = self._reservation(now, month, call_key, session, attempt, prompt_bytes, max_tokens,
                                              held)
                except BudgetHalted as exc:
                    out.append(exc)
                    continue
                self.tally.reserve(entry, self.run_id, (month, entry["pool"]))   # the next request's check counts it
                entries.append(entry)
                out.append(entry)
            for entry in entries:
                # withdrawn before the write, which tallies them as written: counting both would count each twice
                self.tally.settle(entry["reservation_id"])
            written = self._append(entries) if entries else []
            by_id = {entry["reservation_id"]: entry for entry in written}
            self.reserved.update(by_id)
            return [item if isinstance(item, BudgetHalted) else by_id[item["reservation_id"]] for item in out]

    def _reservation(self, now: str, month: str, call_key: str, session: str, attempt: int, prompt_bytes: int,
                     max_tokens: int, held: Optional[Mapping[str, float]] = None) -> dict:
        """One reservation entry, exactly as :meth:`SpendMeter.reserve` writes it (lock held by the caller).

        ``held`` is what other running runs still earmark per pool: money this
        attempt may not take from them.
        """
        worst = self.attempt_worst_case(prompt_bytes, max_tokens)
        pool = self._pool_for(worst or 0.0, month, (), held=held)
        cap = self._pool_cap(pool)
        if cap is not None and worst is not None:
            committed = self.committed(month, pool) + (held or {}).get(pool, 0.0)
            if committed + worst > cap + EPSILON_EUR:
                raise BudgetHalted(f"the {pool} pool for {month} earmarks {eur(cap, 4)}; {eur(committed, 4)} is "
                                   f"charged, reserved or held by a running neighbour and the next call may cost "
                                   f"{eur(worst, 4)}: stopping before it is sent")
        return {
            "record_type": RESERVATION, "schema_version": SCHEMA_VERSION, "recorded_at": now, "month": month,
            "job": self.auth.job, "category": self.auth.category, "pool": pool, "run_id": self.run_id,
            "call_key": call_key, "reservation_id": self.reservation_id(call_key, session, attempt),
            "attempt": attempt, "subject": self.subject, "model_id": self.model_id,
            "worst_input_tokens": prompt_bytes + PROMPT_FRAMING_TOKENS, "max_tokens": max_tokens,
            "worst_case_eur": worst,
        }

    # -- charges -------------------------------------------------------------------
    def _settles(self, call_key: str, session: Optional[str], attempts: Any) -> list[str]:
        if session is None or not isinstance(attempts, int):
            return []
        ids = [self.reservation_id(call_key, session, a) for a in range(1, attempts + 1)]
        return [rid for rid in ids if rid in self.reserved]

    def _cost(self, call: Mapping, answered: bool) -> tuple[Optional[float], str]:
        """(euros, basis) for one call: usage when answered, worst case for each attempt of unknown fate."""
        if self.auth.rate_eur_per_call is None:
            return None, "unbudgeted"
        unknown = int(call.get("unknown_attempts") or 0)
        worst = call.get("worst_case_eur_per_attempt")
        if worst is None and isinstance(call.get("prompt_bytes"), int) and isinstance(call.get("max_tokens"), int):
            worst = self.attempt_worst_case(call["prompt_bytes"], call["max_tokens"])
        if not self.priced:
            return self.auth.rate_eur_per_call * ((1 if answered else 0) + unknown), "flat_rate"
        if worst is None:
            worst = self.auth.rate_eur_per_call   # no prompt size known: the planning rate is all there is
        tokens_in, tokens_out = call.get("input_tokens"), call.get("output_tokens")
        basis, cost = "usage", 0.0
        if answered:
            if isinstance(tokens_in, int) and isinstance(tokens_out, int):
                cost = self.budget.usage_cost(tokens_in, tokens_out)
            else:
                cost, basis = worst, "worst_case"    # answered without a usage report: the most it can be
        return cost + unknown * worst, basis

    def _entry(self, call_key: str, call: Mapping, *, trial: bool, charge_id: str, settles: Sequence[str],
               pending: Sequence[Mapping] = ()) -> dict:
        now, month = utc_now(), self.month
        answered = bool(call.get("answered", True))
        cost, basis = self._cost(call, answered)
        return {
            "record_type": CHARGE, "schema_version": SCHEMA_VERSION, "recorded_at": now, "month": month,
            "job": self.auth.job, "category": self.auth.category,
            "pool": self._pool_for(cost or 0.0, month, pending, settles), "run_id": self.run_id,
            "call_key": call_key,
            "charge_id": charge_id, "trial": trial, "subject": self.subject, "model_id": self.model_id,
            "answered": answered, "input_tokens": call.get("input_tokens"),
            "output_tokens": call.get("output_tokens"), "attempts": call.get("attempts"),
            "unknown_attempts": int(call.get("unknown_attempts") or 0), "basis": basis, "settles": list(settles),
            "cost_eur": cost,
        }

    def _pool_for(self, cost: float, month: str, pending: Sequence[Mapping], settling: Sequence[str] = (),
                  held: Optional[Mapping[str, float]] = None) -> str:
        if self.auth.job != "subject_fingerprint" or self.budget is None:
            return self.auth.pool
        spent = self.committed(month, "general", pending, settling) + (held or {}).get("general", 0.0)
        return "general" if spent + cost <= self.budget.general_pool_eur + EPSILON_EUR else "heartbeat"

    def charge(self, calls: Iterable[tuple[str, Mapping]]) -> list[dict]:
        """Charge answered-or-blocked calls (trials) with one fsync, skipping any already charged.

        Each mapping is a trial record or the like: ``answered``,
        ``input_tokens``, ``output_tokens``, ``attempts``,
        ``unknown_attempts``, and, for the worst case of unknown attempts,
        either ``worst_case_eur_per_attempt`` or ``prompt_bytes`` and
        ``max_tokens``; ``session`` names the reservations it settles.
        Returns the charges written: none for a call already in the ledger,
        which is why the trials of a resumed run can all be passed again.
        """
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            entries: list[dict] = []
            for call_key, call in calls:
                if call_key in self.keys or any(e["call_key"] == call_key for e in entries):
                    continue
                settles = self._settles(call_key, call.get("session"), call.get("attempts"))
                entries.append(self._entry(call_key, call, trial=True, charge_id=f"{call_key}@{call.get('session')}",
                                           settles=settles, pending=entries))
            written = self._append(entries)
            self.keys.update(e["call_key"] for e in written)
            self.charge_ids.update(e["charge_id"] for e in written)
            return written

    def charge_unanswered(self, call_key: str, session: str, call: Mapping) -> Optional[dict]:
        """Settle the attempts of a call that got no answer (it is not a trial and will be called again)."""
        charge_id = f"{call_key}@{session}"
        with file_lock(self.paths.spend_ledger):
            self._fresh()
            if charge_id in self.charge_ids:
                return None
            settles = self._settles(call_key, session, call.get("attempts"))
            entry = self._entry(call_key, {**call, "answered": False}, trial=False, charge_id=charge_id,
                                settles=settles)
            written = self._append([entry])[0]
            self.charge_ids.add(charge_id)
            return written

    def run_totals(self) -> tuple[Optional[float], float]:
        """(charged, open worst case) of this run, in euros; charged is None when a cost is unknown."""
        mine = self.mine
        costs = [e.get("cost_eur") for e in mine if e.get("record_type", CHARGE) == CHARGE]
        worst = sum(e.get("worst_case_eur") or 0.0 for e in open_reservations(mine))
        if any(c is None for c in costs):
            return None, round(worst, 6)
        return round(sum(costs), 6), round(worst, 6)

    def run_cost(self) -> Optional[float]:
        """This run's spend: charged + open worst case (None when a cost is unknown)."""
        charged, worst = self.run_totals()
        return None if charged is None else round(charged + worst, 6)
