"""Two reference instances side by side answer exactly as one does."""
import asyncio

import pytest

from llmarchive.subjects import make_subject
from llmarchive.subjects.reference_pool import ReferencePool

PROMPTS = [f"In one short sentence, name a use for {thing}." for thing in ("rope", "salt", "chalk", "wax")]


@pytest.mark.slow
def test_a_pool_of_two_gives_the_single_instance_answers_and_records():
    single = make_subject("reference", max_tokens=12)
    pool = make_subject("reference", max_tokens=12, workers=2)
    assert isinstance(pool, ReferencePool) and pool.workers == 2
    assert pool.api_surface_sha == single.api_surface_sha
    assert pool.config()["workers"] == 2 and pool.billed is False

    async def all_at_once():
        async with pool.connect(2):
            return await asyncio.gather(*(pool.acall(p) for p in PROMPTS))

    parallel = asyncio.run(all_at_once())
    assert [r.text for r in parallel] == [single.call(p).text for p in PROMPTS]


def test_a_pool_refuses_instances_that_differ():
    class Fake:
        def __init__(self, sha):
            self.api_surface_sha = sha

    from llmarchive.subjects import SubjectError
    with pytest.raises(SubjectError, match="same model"):
        ReferencePool([Fake("a"), Fake("b")])
