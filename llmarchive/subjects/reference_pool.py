"""Several copies of the reference model answering side by side.

A greedy call from an empty KV cache depends only on the prompt, the model
file and the fixed settings, so two identical instances — each loaded once,
each with the same ``n_threads`` — return byte-identical answers whichever
of them takes a call.  Running them in two threads (llama.cpp releases the
GIL while it computes) uses both cores of a small machine: measured here,
eight calls took 16.4 s on two instances against 31.3 s on one, with
identical texts.

To the runner a pool looks like an API subject (``is_async``): it takes up
to ``workers`` calls at once and records them in schedule order, so a run is
the same run at any pool size — which is why the pool size is recorded in
``config()`` but is not part of ``api_surface_sha``.
"""
import asyncio
import contextlib
from typing import AsyncIterator, Sequence

from llmarchive.subjects.base import CallResult, SubjectError


class ReferencePool:
    """``workers`` identical :class:`~llmarchive.subjects.reference.ReferenceSubject` instances."""

    is_async = True

    def __init__(self, subjects: Sequence) -> None:
        if not subjects:
            raise SubjectError("a reference pool needs at least one subject")
        first = subjects[0]
        for other in subjects[1:]:
            if other.api_surface_sha != first.api_surface_sha:
                raise SubjectError("every instance of a reference pool must be the same model with the same settings")
        self.subjects = list(subjects)
        self.first = first
        self._free: "asyncio.Queue | None" = None

    @property
    def workers(self) -> int:
        return len(self.subjects)

    # -- what the record sees: the single instance's facts -------------------
    def __getattr__(self, name: str):
        # provider, billed, default_series, max_tokens, name, model_sha256,
        # subject_model_id, explicitly_set, api_surface_sha, condition_profile …
        if name in ("subjects", "first", "_free"):
            raise AttributeError(name)
        return getattr(self.first, name)

    def runtime(self) -> dict:
        return {**self.first.runtime(), "workers": self.workers}

    def config(self) -> dict:
        return {**self.first.config(), "workers": self.workers}

    # -- calls ----------------------------------------------------------------
    def call(self, prompt: str, key: str = "") -> CallResult:
        return self.first.call(prompt, key)

    @contextlib.asynccontextmanager
    async def connect(self, max_connections: int = 1) -> AsyncIterator["ReferencePool"]:
        free: asyncio.Queue = asyncio.Queue()
        for subject in self.subjects:
            free.put_nowait(subject)
        self._free = free
        try:
            yield self
        finally:
            self._free = None

    async def acall(self, prompt: str, key: str = "") -> CallResult:
        if self._free is None:
            return await asyncio.to_thread(self.first.call, prompt, key)
        subject = await self._free.get()
        try:
            return await asyncio.to_thread(subject.call, prompt, key)
        finally:
            self._free.put_nowait(subject)
