"""Group commit for the spend ledger's reservations: the attempts that leave together are reserved together.

Every attempt of a paid (or explicitly unbudgeted) call is reserved in the
spend ledger — made durable — before its request leaves
(:mod:`llmarchive.budget.meter`).  One reservation at a time costs a lock, a
write and an fsync per call; at 64 or 256 calls in flight against a fast
server that, not the calls, was what limited a run (bench/runner_bench.py
part c: three quarters of the runner's thread time went to waiting on the
ledger's lock and fsync).  Here the attempts that ask while a batch is being
written wait for the next batch, and each batch is one lock, one cap check
per entry against everything already committed (the batch's own entries
included), one write and one fsync — the trial log's group commit, applied
to the ledger.  Nothing about an entry changes: its fields, its pool, its
refusal past the cap, and that the request leaves only once it is durable.

:meth:`llmarchive.budget.meter.SpendMeter.reserve_many` writes one batch;
:class:`Reserver` is the asyncio side that gathers the waiting attempts.
"""
import asyncio
from typing import Optional, Sequence, Union

from llmarchive.budget import BudgetHalted, Request, SpendMeter


class Reserver:
    """Gathers the attempts waiting to be reserved and writes them as one batch, in a thread.

    :meth:`reserve` returns once the attempt's reservation is durable, or
    raises what refused it (:class:`BudgetHalted`, or the ``OSError`` of a
    failed write) — the caller's request never leaves before that.  At most
    one batch is being written at a time; the attempts that ask meanwhile
    form the next one.
    """

    def __init__(self, meter: SpendMeter) -> None:
        self.meter = meter
        self.waiting: list[tuple[Request, asyncio.Future]] = []
        self.writing: Optional[asyncio.Task] = None

    async def reserve(self, request: Request) -> dict:
        done = asyncio.get_running_loop().create_future()
        self.waiting.append((request, done))
        if self.writing is None:
            self.writing = asyncio.ensure_future(self._drain())
        return await done

    async def _drain(self) -> None:
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                try:
                    results = await asyncio.to_thread(self.meter.reserve_many, [request for request, _ in batch])
                except Exception as exc:  # relayed: each waiting attempt raises it (an OSError is a stop)
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (_, done), result in zip(batch, results):
                    if done.done():
                        continue
                    if isinstance(result, BudgetHalted):
                        done.set_exception(result)
                    else:
                        done.set_result(result)
        finally:
            self.writing = None
