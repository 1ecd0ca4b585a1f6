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
from typing import Optional

from llmarchive.run.plan import PlannedTrial


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

        A worker hands its result to the writer and waits until the trial is
        fsynced before it takes the next trial, so at most ``concurrency``
        calls are ever unrecorded.  The writer takes every result waiting
        at that moment and writes them with one fsync (group commit), in a
        thread, so the event loop keeps the other calls moving meanwhile.
        Ledger charges follow off the critical path: the trial log is the
        record of what was called, and a missing charge is added from it by
        the run's next start, so they never delay a call.

        The first stop (no answer, the pool's cap, a failed write, a subject
        error) ends the taking of new slots; the calls already in flight
        finish and are recorded.  Returns that stop, or None.
        """
        pending = iter(remaining)
        stops: list[tuple] = []
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def charge(written: list[dict]) -> None:
            try:
                await asyncio.to_thread(self._charge, written)
            except OSError as exc:
                stops.append(("interrupted", self._interruption("write_failed", None,
                                                                f"spend ledger: {type(exc).__name__}: {exc}")))

        async def writer() -> None:
            charging: Optional[asyncio.Future] = None
            try:
                while True:
                    batch = [await queue.get()]
                    while not queue.empty():
                        batch.append(queue.get_nowait())
                    stop = any(item is None for item in batch)
                    batch = [item for item in batch if item is not None]
                    if batch:
                        try:
                            written = await asyncio.to_thread(self._record, [(p, r) for p, r, _ in batch])
                        except Exception as exc:  # relayed, not handled: the waiting worker re-raises all but OSError
                            for *_, done in batch:
                                done.set_exception(exc)
                            if stop:
                                return
                            continue
                        for *_, done in batch:
                            done.set_result(None)
                        if charging is not None:
                            await charging
                        charging = asyncio.ensure_future(charge(written))
                    if stop:
                        return
            finally:
                if charging is not None:
                    await charging

        async def worker() -> None:
            for planned in pending:          # one shared iterator: calls start in schedule order
                if stops:
                    return
                try:
                    hook = self._before_send(planned)
                    if hook is None:
                        result = await self.subject.acall(self._prompt(planned), self._call_key(planned))
                    else:
                        result = await self.subject.acall(self._prompt(planned), self._call_key(planned), hook)
                except self.STOP_ERRORS as exc:
                    stops.append(await asyncio.to_thread(self._call_failed, planned, exc))
                    return
                except OSError as exc:       # the reservation could not be written: nothing was sent
                    stops.append(("interrupted", self._interruption("write_failed", planned,
                                                                    f"spend ledger: {type(exc).__name__}: {exc}")))
                    return
                if result.failure is not None:
                    stops.append(await asyncio.to_thread(self._unanswered, planned, result))
                    return
                durable = loop.create_future()
                queue.put_nowait((planned, result, durable))
                try:
                    await durable
                except OSError as exc:
                    stops.append(("interrupted", self._interruption("write_failed", planned,
                                                                    f"trial log: {type(exc).__name__}: {exc}")))
                    return

        workers = min(self.settings.concurrency, len(remaining))
        writing = asyncio.create_task(writer())
        try:
            async with self.subject.connect(workers):
                await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            queue.put_nowait(None)
            await writing
        halted = [s for s in stops if s[0] == "halted"]
        return (halted or stops or [None])[0]
