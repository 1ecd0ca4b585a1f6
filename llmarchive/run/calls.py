"""How a run's calls are made and recorded: one at a time, or concurrently with one writer.

:class:`CallLoop` is the part of :class:`llmarchive.run.runner._Run` that sends
the open slots and makes each answer a durable trial; the run supplies the
rest (``_prompt``, ``_call_key``, ``_record``, ``_charge``, ``_before_send``,
``_call_failed``, ``_unanswered``, ``_interruption``, ``subject``,
``settings``) and ``STOP_ERRORS``, the exceptions that stop a run rather
than crash it (a subject that failed for good, the budget's cap).  Each
loop returns the first stop, or None when every slot was recorded.
"""
import asyncio
from typing import Iterator, Optional

from llmarchive.run.plan import PlannedTrial
from llmarchive.subjects import CallResult


class CallLoop:
    """The calling loops of a run (a mixin of :class:`llmarchive.run.runner._Run`)."""

    STOP_ERRORS: tuple = ()

    def _execute_sync(self, remaining: list[PlannedTrial]) -> Optional[tuple]:
        for planned in remaining:
            try:
                result = self.subject.call(self._prompt(planned), self._call_key(planned))
            except self.STOP_ERRORS as exc:
                return self._call_failed(planned, exc)
            if result.failure is not None:
                return self._unanswered(planned, result)
            try:
                self._charge(self._record([(planned, result)]))
            except OSError as exc:
                return ("interrupted", self._interruption("write_failed", planned, f"{type(exc).__name__}: {exc}"))
        return None

    async def _execute_async(self, remaining: list[PlannedTrial]) -> Optional[tuple]:
        """Workers make the calls; one writer makes their trials durable.

        A worker (:meth:`_call_worker`) hands its result to the writer and
        sends its next call while that trial is fsynced; it waits for the
        fsync before handing over the next answer, so at most
        ``concurrency`` answers are ever waiting to be recorded besides the
        ``concurrency`` calls in flight.  The writer
        (:meth:`_group_writer`) takes every result waiting at that moment and
        writes them with one fsync (group commit, :meth:`_commit`), in a
        thread, so the event loop keeps the other calls moving meanwhile.
        Ledger charges follow off the critical path (:meth:`_charge_later`):
        the trial log is the record of what was called, and a missing charge
        is added from it by the run's next start, so they never delay a call.

        The first stop (no answer, the pool's cap, a failed write, a subject
        error) ends the taking of new slots; the calls already in flight
        finish and are recorded.  Returns that stop, or None.
        """
        shared = _Shared(remaining)
        workers = min(self.settings.concurrency, len(remaining))
        writing = asyncio.create_task(self._group_writer(shared))
        try:
            async with self.subject.connect(workers):
                await asyncio.gather(*(self._call_worker(shared) for _ in range(workers)))
        finally:
            shared.queue.put_nowait(None)
            await writing
        halted = [s for s in shared.stops if s[0] == "halted"]
        return (halted or shared.stops or [None])[0]

    async def _call_worker(self, shared: "_Shared") -> None:
        """Call the next open slot and hand the answer to the writer, until the first stop.

        The worker does not wait for its trial's fsync before it sends the
        next call: it waits for it before handing over the next answer
        (and before it stops), so the fsync of one trial overlaps the next
        call, and at most one answer per worker is waiting to be made
        durable.  A slot counts as done only once its trial is durable.
        """
        handed: Optional[tuple[PlannedTrial, asyncio.Future]] = None
        try:
            for planned in shared.pending:   # one shared iterator: calls start in schedule order
                if shared.stops:
                    return
                try:
                    result = await self._send(planned)
                except self.STOP_ERRORS as exc:
                    shared.stops.append(await asyncio.to_thread(self._call_failed, planned, exc))
                    return
                except OSError as exc:       # the reservation could not be written: nothing was sent
                    shared.stops.append(self._write_failed(planned, "spend ledger", exc))
                    return
                if result.failure is not None:
                    shared.stops.append(await asyncio.to_thread(self._unanswered, planned, result))
                    return
                if handed is not None:
                    made, handed = await self._made_durable(shared, *handed), None
                    if not made:
                        return
                handed = (planned, asyncio.get_running_loop().create_future())
                shared.queue.put_nowait((planned, result, handed[1]))
        finally:
            if handed is not None:
                await self._made_durable(shared, *handed)

    async def _made_durable(self, shared: "_Shared", planned: PlannedTrial, durable: asyncio.Future) -> bool:
        """Wait until a handed-over trial is durable; a failed write is a stop (False)."""
        try:
            await durable
        except OSError as exc:
            shared.stops.append(self._write_failed(planned, "trial log", exc))
            return False
        return True

    async def _send(self, planned: PlannedTrial) -> CallResult:
        """One call, with the run's hook before each attempt when it has one (the budget's reservation)."""
        hook = self._before_send(planned)
        if hook is None:
            return await self.subject.acall(self._prompt(planned), self._call_key(planned))
        return await self.subject.acall(self._prompt(planned), self._call_key(planned), hook)

    async def _group_writer(self, shared: "_Shared") -> None:
        """Write every result waiting at that moment as one batch, until the end mark; charges follow each batch."""
        charging: Optional[asyncio.Future] = None
        try:
            while True:
                batch = [await shared.queue.get()]
                while not shared.queue.empty():
                    batch.append(shared.queue.get_nowait())
                stop = any(item is None for item in batch)
                batch = [item for item in batch if item is not None]
                if batch:
                    written = await self._commit(batch)
                    if written is not None:
                        if charging is not None:
                            await charging
                        charging = asyncio.ensure_future(self._charge_later(shared, written))
                if stop:
                    return
        finally:
            if charging is not None:
                await charging

    async def _commit(self, batch: list[tuple]) -> Optional[list[dict]]:
        """One batch made durable with one fsync; each waiting worker is released, or handed the failure."""
        try:
            written = await asyncio.to_thread(self._record, [(p, r) for p, r, _ in batch])
        except Exception as exc:  # relayed, not handled: the waiting worker re-raises all but OSError
            for *_, done in batch:
                done.set_exception(exc)
            return None
        for *_, done in batch:
            done.set_result(None)
        return written

    async def _charge_later(self, shared: "_Shared", written: list[dict]) -> None:
        """The ledger charges of a written batch; a failed write is a stop (the next start adds the charge)."""
        try:
            await asyncio.to_thread(self._charge, written)
        except OSError as exc:
            shared.stops.append(self._write_failed(None, "spend ledger", exc))

    def _write_failed(self, planned: Optional[PlannedTrial], what: str, exc: OSError) -> tuple:
        return ("interrupted", self._interruption("write_failed", planned, f"{what}: {type(exc).__name__}: {exc}"))


class _Shared:
    """What one concurrent pass's workers and writer share: the open slots, the stops met, the writer's queue."""

    __slots__ = ("pending", "stops", "queue")

    def __init__(self, remaining: list[PlannedTrial]) -> None:
        self.pending: Iterator[PlannedTrial] = iter(remaining)
        self.stops: list[tuple] = []
        self.queue: asyncio.Queue = asyncio.Queue()
