"""Benchmark: what the runner costs on top of the calls it makes.

(a) Reference subject.  Wall time per trial through the runner
    (``run_protocol``: schedule, call, outcome table, chained fsynced trial
    log, run record, measurement) against a bare llama-cpp-python call with
    the same prompt and parameters on the same loaded model, in the same
    process.  Every runner call is paired with a bare call on the same
    prompt made right next to it (bare first and runner first alternate),
    so both see the same machine load — on a shared machine the load moves
    whole passes by ±15 % — and the bare calls' time is taken out of the
    runner's wall time.  Target: overhead
    ≤ 5 %.  Greedy decoding makes every runner response byte-identical to
    its bare twin, which the bench checks (same work, not just the same
    parameters).  Also printed: the runner's own bookkeeping per trial
    (time outside the subject's call) and trials per hour on this machine.

(b) API path.  A 120-trial protocol against the fake provider
    (tests/fake_provider.py, real HTTP on 127.0.0.1, in its own process)
    answering every call after 500 ms, at concurrency 8, with a budget and
    its spend ledger as in production (token prices: a durable reservation
    before every call, a usage charge after it).  Ideal throughput is
    8 / 0.5 s = 16 trials/s; target ≥ 90 %.

(c) OpenAI-compatible path at inference-cluster concurrency.  The subject
    an outsider's ``comparison run`` uses (OpenAICompatSubject over
    subjects/http.py) through ``run_protocol`` — budget reservations and
    charges, the chained fsynced trial log with group commit, run record,
    measurement — at concurrency 64 against an instant local server (an
    asyncio HTTP/1.1 server in its own process, :func:`serve_instant`),
    against a bare ``httpx.AsyncClient`` loop sending the same request
    bodies to the same server at the same concurrency.  Passes alternate
    (bare, runner, bare, …) and the best of each is compared.  Targets: at
    least 200 calls/s and at least 0.8 of the bare loop, so a 480-call
    protocol is bound by the model server, not by the archive.  (The fake
    provider is not used here: its ThreadingHTTPServer keeps a listen
    backlog of 5, so 64 connections opened at once get resets and retries,
    which is what part (b) run at ``--concurrency 64`` measures.)

Run: ``.venv/bin/python bench/runner_bench.py`` (all parts; (c) at
concurrency 64), or ``--part a`` / ``--part b`` / ``--part c``.  Part (a) uses the first ``--items`` scenarios of
risky_choice_framing__wording__v0 (four versions each) at the protocol's own
``max_tokens`` unless ``--max-tokens`` is given; its duration depends on how
busy the machine is.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llmarchive import budget as budget_mod  # noqa: E402
from llmarchive.protocols import registry
from llmarchive.archive.paths import ArchivePaths  # noqa: E402
from llmarchive.run.runner import RunSettings, run_protocol, schedule  # noqa: E402

PROTOCOL = "risky_choice_framing__wording__v0"


def subset(protocol: dict, items: int) -> dict:
    """The first ``items`` scenarios, one replicate each (n = items)."""
    out = dict(protocol)
    out["panel"] = protocol["panel"][:items]
    out["item_ids"] = [item["item_id"] for item in out["panel"]]
    out.update(n_items=items, n_per_scenario=1, n=items, protocol_id=f"bench_{items}__wording__v0")
    return out


def part_a(paths: ArchivePaths, items: int, rounds: int, max_tokens: int | None) -> bool:
    from llmarchive.subjects.reference import ReferenceSubject

    protocol = subset(registry.load_protocol(paths, PROTOCOL), items)
    if max_tokens:
        protocol["generation"] = {"max_tokens": max_tokens}
    subject = ReferenceSubject(protocol["generation"]["max_tokens"])
    params = subject.explicitly_set
    llm, real_call = subject.llm, subject.call
    clock = {"bare": 0.0, "inside": 0.0, "bare_calls": 0}
    pairs: list[tuple[str, str]] = []

    def bare(prompt: str) -> str:
        """What a user of llama-cpp-python would write: same model, prompt and parameters."""
        llm.reset()
        return llm(subject.render(prompt), **params)["choices"][0]["text"]

    def paired_call(prompt: str, key: str = ""):
        # A bare call on the same prompt next to each runner call, so both see
        # the same machine load; which goes first alternates, so neither gains
        # from warm caches.  The bare call's time is taken out of the runner's.
        bare_first = clock["bare_calls"] % 2 == 0
        if bare_first:
            t0 = time.perf_counter()
            text = bare(prompt)
        t1 = time.perf_counter()
        result = real_call(prompt, key)
        t2 = time.perf_counter()
        if not bare_first:
            text = bare(prompt)
            t3 = time.perf_counter()
        clock["bare"] += (t1 - t0) if bare_first else (t3 - t2)
        clock["inside"] += t2 - t1
        clock["bare_calls"] += 1
        pairs.append((text, result.text))
        return result

    subject.call = paired_call
    trials = 0
    runner_time = 0.0
    print(f"(a) reference subject: {items} scenarios x 4 versions per run, {rounds} run(s), "
          f"max_tokens {params['max_tokens']}, n_threads {subject.settings.n_threads}; "
          "each runner call is paired with a bare call on the same prompt")
    for number in range(1, rounds + 1):
        before_bare = clock["bare"]
        start = time.perf_counter()
        result = run_protocol(paths, protocol, subject,
                              RunSettings(run_id=f"bench-a-{number}", run_date="2026-11-07"))
        elapsed = time.perf_counter() - start
        assert result.complete
        spent = elapsed - (clock["bare"] - before_bare)
        runner_time += spent
        trials += len(result.trials)
        print(f"    run {number}: {len(result.trials)} trials, {spent:.2f} s through the runner, "
              f"{clock['bare'] - before_bare:.2f} s in the paired bare calls", flush=True)
    per_bare = clock["bare"] / clock["bare_calls"]
    per_runner = runner_time / trials
    overhead = per_runner / per_bare - 1
    own_ms = 1000 * (runner_time - clock["inside"]) / trials
    mismatches = sum(a != b for a, b in pairs)
    ok = overhead <= 0.05 and mismatches == 0
    print(f"    bare llama-cpp-python call: {per_bare:.3f} s per call")
    print(f"    through the runner:         {per_runner:.3f} s per trial")
    print(f"    overhead: {100 * overhead:+.2f} % (target <= 5 %) -> {'PASS' if overhead <= 0.05 else 'FAIL'}")
    print(f"    runner bookkeeping outside the call: {own_ms:.1f} ms per trial "
          f"({100 * own_ms / 1000 / per_bare:.2f} % of a call)")
    print(f"    responses identical to the bare calls: {'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}")
    print(f"    trials per hour on this machine: {3600 / per_runner:.0f}")
    return ok


def part_b(paths: ArchivePaths, latency: float, concurrency: int) -> bool:
    import httpx

    from llmarchive.subjects.anthropic import AnthropicSubject
    from llmarchive.subjects.http import RetryPolicy

    protocol = registry.load_protocol(paths, PROTOCOL)
    os.environ["ANTHROPIC_API_KEY"] = "fake-credential-bench"
    budget_mod.write_budget(paths, budget_mod.Budget(20.0, 6.5, 1.0, {"scenario": 0.0094, "fingerprint": 0.0011},
                                                     prices_eur_per_mtok={"input": 2.8, "output": 14.0}))
    budget = budget_mod.load_budget(paths)
    trials = len(schedule(protocol))
    auth = budget_mod.authorize_run(paths, budget, protocol, "manual", trials)
    ideal_rate = concurrency / latency
    # The server runs in its own process, as a real provider would: in this
    # one it would compete with the runner for the interpreter.
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--latency", str(latency)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        subject = AnthropicSubject("claude-bench-1", protocol["generation"]["max_tokens"], base_url=base_url,
                                   retry=RetryPolicy(max_attempts=3))
        start = time.perf_counter()
        result = run_protocol(paths, protocol, subject,
                              RunSettings(run_id="bench-b", run_date="2026-11-07", concurrency=concurrency),
                              authorization=auth, budget=budget)
        elapsed = time.perf_counter() - start
        in_flight = httpx.get(base_url + "/_fake/stats").json()["max_in_flight"]
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    assert result.complete and len(result.trials) == trials
    rate = trials / elapsed
    share = rate / ideal_rate
    ok = share >= 0.90 and in_flight <= concurrency
    print(f"(b) API path: {trials} trials, {latency * 1000:.0f} ms per call, concurrency {concurrency}")
    print(f"    wall time: {elapsed:.2f} s (ideal {trials / ideal_rate:.2f} s)")
    print(f"    throughput: {rate:.2f} trials/s of an ideal {ideal_rate:.2f} -> {100 * share:.1f} % "
          f"(target >= 90 %) -> {'PASS' if share >= 0.90 else 'FAIL'}")
    print(f"    most requests in flight at once: {in_flight} (bound {concurrency})")
    entries = budget_mod.ledger_entries(paths)
    print(f"    ledger: {sum(e['record_type'] == budget_mod.RESERVATION for e in entries)} reservations, "
          f"{sum(e['record_type'] == budget_mod.CHARGE for e in entries)} charges, "
          f"{len(budget_mod.open_reservations(entries))} left open; run cost €{result.run['cost_eur']:.4f}")
    return ok


# -- (c) the OpenAI-compatible path against an instant server ---------------------------------------------

INSTANT_BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench-model",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "DECISION: A"}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 4, "total_tokens": 124},
}).encode()


def serve_instant() -> None:
    """An OpenAI-compatible server that answers at once: asyncio, HTTP/1.1 keep-alive, one process.

    Written for the bench so the server is not what is measured: no thread
    per connection (the fake provider's ThreadingHTTPServer tops out far
    below the runner), no model, the same canned completion for every
    ``POST``.  Prints its base URL, counts the most requests open at once
    (``GET /stats``), and stops when its stdin closes.
    """
    import asyncio

    state = {"open": 0, "max": 0, "served": 0}

    async def handle(reader: "asyncio.StreamReader", writer: "asyncio.StreamWriter") -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                state["open"] += 1
                state["max"] = max(state["max"], state["open"])
                if length:
                    await reader.readexactly(length)
                if method == "GET" and target == "/stats":
                    body = json.dumps({"max_in_flight": state["max"], "served": state["served"]}).encode()
                else:
                    body = INSTANT_BODY
                    state["served"] += 1
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
                state["open"] -= 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)   # returns when stdin closes
        server.close()

    asyncio.run(main())


def bare_loop(base_url: str, bodies: list[dict], concurrency: int) -> float:
    """What a user of httpx would write: one AsyncClient, ``concurrency`` tasks, the same requests."""
    import asyncio

    import httpx

    async def run() -> float:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        todo = iter(bodies)
        async with httpx.AsyncClient(limits=limits) as client:
            async def worker() -> None:
                for body in todo:
                    response = await client.post(base_url + "/v1/chat/completions", json=body,
                                                 headers={"content-type": "application/json"})
                    response.raise_for_status()
                    response.json()["choices"][0]["message"]["content"]
            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.perf_counter() - start

    return asyncio.run(run())


def part_c(paths: ArchivePaths, concurrency: int, replicates: int, rounds: int) -> bool:
    import httpx

    from llmarchive.subjects.openai_compat import OpenAICompatSubject

    protocol = registry.load_protocol(paths, PROTOCOL)
    protocol = {**protocol, "n_per_scenario": replicates, "n": protocol["n_items"] * replicates,
                "protocol_id": f"bench_openai_{replicates}__wording__v0"}
    planned = schedule(protocol)
    calls = len(planned)
    prompts = {item["item_id"]: item for item in protocol["panel"]}
    # As in production: an OpenAI-compatible subject is paid, so the run has
    # a budget, a durable reservation before every call and a charge after.
    budget_mod.write_budget(paths, budget_mod.Budget(10_000.0, 6.5, 1.0,
                                                     {"scenario": 0.0094, "fingerprint": 0.0011},
                                                     prices_eur_per_mtok={"input": 0.1, "output": 0.1}))
    budget = budget_mod.load_budget(paths)
    max_tokens = protocol["generation"]["max_tokens"]
    server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve-instant"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    bare_times: list[float] = []
    runner_times: list[float] = []
    try:
        base_url = server.stdout.readline().strip()
        subject = OpenAICompatSubject("bench-model", max_tokens, base_url=base_url + "/v1")
        bodies = [subject.request_body(prompts[p.item_id]["versions"][p.version]) for p in planned]
        bare_loop(base_url, bodies[:concurrency * 2], concurrency)          # warm both sides
        for number in range(1, rounds + 1):
            # bare and runner alternate, so both see the same machine load
            bare_times.append(bare_loop(base_url, bodies, concurrency))
            auth = budget_mod.authorize_run(paths, budget, protocol, "manual", calls)
            start = time.perf_counter()
            result = run_protocol(paths, protocol, subject,
                                  RunSettings(run_id=f"bench-c-{number}", run_date="2026-11-07",
                                              concurrency=concurrency),
                                  authorization=auth, budget=budget)
            runner_times.append(time.perf_counter() - start)
            assert result.complete and len(result.trials) == calls
        in_flight = httpx.get(base_url + "/stats").json()["max_in_flight"]
        # httpx's own best case, for scale: the same loop on 8 connections, where its pool is cheap
        bare8_rate = calls / bare_loop(base_url, bodies, 8)
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    bare_rate = calls / min(bare_times)
    runner_rate = calls / min(runner_times)
    ratio = runner_rate / bare_rate
    ok = ratio >= 0.8 and runner_rate >= 200 and in_flight <= concurrency
    print(f"(c) OpenAI-compatible path: {calls} calls per pass, concurrency {concurrency}, "
          f"an instant asyncio server in its own process, best of {rounds}")
    print("    passes (s): bare", [round(t, 2) for t in bare_times], "runner", [round(t, 2) for t in runner_times])
    print(f"    bare httpx loop:  {bare_rate:.0f} calls/s")
    print(f"    through the runner (OpenAICompatSubject, reservations and charges, chained fsynced trial log, "
          "run record, measurement): "
          f"{runner_rate:.0f} calls/s (target >= 200) -> {'PASS' if runner_rate >= 200 else 'FAIL'}")
    print(f"    ratio to the bare loop: {ratio:.2f} (target >= 0.8) -> {'PASS' if ratio >= 0.8 else 'FAIL'}")
    print(f"    most requests in flight at once: {in_flight} (bound {concurrency})")
    print(f"    for scale: the bare loop on 8 connections (httpx's pool is quadratic in its size) "
          f"{bare8_rate:.0f} calls/s; the runner at {concurrency} is {runner_rate / bare8_rate:.2f} of it")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("a", "b", "c", "all"), default="all")
    parser.add_argument("--items", type=int, default=3, help="(a) scenarios per run (4 trials each)")
    parser.add_argument("--rounds", type=int, default=1, help="(a) runs of the subset protocol")
    parser.add_argument("--max-tokens", type=int, help="(a) override the protocol's max_tokens")
    parser.add_argument("--latency", type=float, default=0.5, help="(b) seconds per fake call")
    parser.add_argument("--concurrency", type=int, default=8, help="(b) calls in flight")
    parser.add_argument("--replicates", type=int, default=16,
                        help="(c) replicates per scenario (15 scenarios x 4 versions each)")
    parser.add_argument("--passes", type=int, default=3, help="(c) passes of the bare loop and the runner")
    parser.add_argument("--serve-instant", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_instant:
        serve_instant()
        return 0
    ok = True
    with tempfile.TemporaryDirectory(prefix="runner-bench-") as home:
        paths = ArchivePaths.from_env(home).ensure()
        if args.part in ("b", "all"):
            ok &= part_b(paths, args.latency, args.concurrency)
        if args.part in ("c", "all"):
            ok &= part_c(paths, 64 if args.concurrency == 8 and args.part == "all" else args.concurrency,
                         args.replicates, args.passes)
        if args.part in ("a", "all"):
            ok &= part_a(paths, args.items, args.rounds, args.max_tokens)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
