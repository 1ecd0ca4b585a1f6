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
    subjects/http.py) through ``run_protocol`` as that command runs it (an
    unbudgeted authorization: ledger reservations and charges, the chained
    fsynced trial log with group commit, the run record), against the best
    plain client we could write: one one-connection ``httpx.AsyncClient``
    per worker, the same request bodies, nothing recorded (not a single
    client whose pool holds every connection: httpcore's pool is quadratic
    in its size).  A grid of concurrency 8, 64 and 256 against a server
    that answers every call after 0, 50 and 500 ms (:func:`serve`, asyncio
    in its own process).  Within a cell plain and runner passes alternate
    and the best of each is compared; the runner's time is its calls phase
    (from ``run_protocol`` to the last trial made durable; the final
    measurement is not the cost looked at).  Printed per cell: both rates,
    their ratio (target >= 0.9) and the share of the ceiling
    concurrency / latency each reaches.  A cell's size is about 3 s of
    ideal time (1 s with ``--quick``), between 60 and 1,920 calls.

Run: ``.venv/bin/python bench/runner_bench.py`` (all parts), or ``--part a`` / ``--part b`` / ``--part c``.  Part (a) uses the first ``--items`` scenarios of
risky_choice_framing__wording__v0 (four versions each) at the protocol's own
``max_tokens`` unless ``--max-tokens`` is given; its duration depends on how
busy the machine is.
"""
import argparse
import contextlib
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
    from llmarchive.subjects import ReferenceSubject

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


# -- (c) the OpenAI-compatible path against a fast server ------------------------------------------------

SERVER_BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "model": "bench-model",
    "system_fingerprint": "b0000-bench",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "DECISION: A"}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 4, "total_tokens": 124},
}).encode()


def serve(latency: float) -> None:
    """An OpenAI-compatible server that answers every call after exactly ``latency`` seconds.

    Written for the bench so the server is not what is measured: asyncio,
    HTTP/1.1 keep-alive, one process, no thread per connection (the fake
    provider's ThreadingHTTPServer tops out far below the runner), no
    model, the same canned completion for every ``POST`` after an
    ``asyncio.sleep`` (so any number of calls wait at once).  Prints its
    base URL, counts the most requests open at once (``GET /stats``, which
    also resets the count), and stops when its stdin closes.
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
                if length:
                    await reader.readexactly(length)
                if method == "GET" and target == "/stats":
                    body = json.dumps({"max_in_flight": state["max"], "served": state["served"]}).encode()
                    state["max"] = 0
                else:
                    state["open"] += 1
                    state["max"] = max(state["max"], state["open"])
                    if latency:
                        await asyncio.sleep(latency)
                    body = SERVER_BODY
                    state["served"] += 1
                    state["open"] -= 1
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)   # returns when stdin closes
        server.close()

    asyncio.run(main())


def plain_client(base_url: str, bodies: list[dict], concurrency: int) -> float:
    """The best plain client we could write: ``concurrency`` one-connection AsyncClients, the same requests.

    Each worker owns one ``httpx.AsyncClient`` holding one kept-alive
    connection (a single client whose pool holds them all is quadratic in
    the pool size in httpcore), posts the next body, reads the answer's
    text, and takes the next.  Nothing is recorded.  Returns the seconds
    from opening the clients (one shared TLS context) to the last answer.
    """
    import asyncio

    import httpx

    async def run() -> float:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        todo = iter(bodies)
        url = base_url + "/v1/chat/completions"
        start = time.perf_counter()     # opening the clients counts, as it does in the runner's calls phase
        async with contextlib.AsyncExitStack() as stack:
            tls = httpx.create_ssl_context()    # one TLS context for all, as the runner's subject shares one
            clients = [await stack.enter_async_context(httpx.AsyncClient(limits=limits, verify=tls))
                       for _ in range(concurrency)]

            async def worker(client: "httpx.AsyncClient") -> None:
                for body in todo:
                    response = await client.post(url, json=body)
                    response.raise_for_status()
                    response.json()["choices"][0]["message"]["content"]
            await asyncio.gather(*(worker(c) for c in clients))
            return time.perf_counter() - start

    return asyncio.run(run())


GRID_CONCURRENCY = (8, 64, 256)
GRID_LATENCY = (0.0, 0.05, 0.5)


def cell_replicates(concurrency: int, latency: float, seconds: float, most: int) -> int:
    """Replicates (60 calls each) for one cell: about ``seconds`` of ideal time, at least one, at most ``most``."""
    if latency == 0:
        return most
    return max(1, min(most, round(seconds * concurrency / latency / 60)))


def runner_pass(paths: ArchivePaths, protocol: dict, subject, concurrency: int, run_id: str) -> float:
    """One ``run_protocol`` pass; returns the calls phase: from the call to the last trial made durable.

    The outsider's path (``comparison run``): an unbudgeted authorization,
    so the spend ledger still gets its reservation before each attempt and
    a charge per trial, as it does there.  The final measurement is timed
    out (it is not the calls phase).
    """
    from llmarchive.budget import unbudgeted

    last = [0.0]

    def progress(done: int, total: int, trial: dict) -> None:
        last[0] = time.perf_counter()

    # A fresh home per pass: a run's start reads and verifies the whole spend ledger, which in one bench home
    # would grow by two entries per call over the grid and be timed as the later cells' calls phase.
    with tempfile.TemporaryDirectory(prefix="runner-bench-pass-", dir=paths.home) as home:
        fresh = ArchivePaths.from_env(home).ensure()
        start = time.perf_counter()
        result = run_protocol(fresh, protocol, subject,
                              RunSettings(run_id=run_id, run_date="2026-11-07", concurrency=concurrency),
                              authorization=unbudgeted("manual"), progress=progress)
        assert result.complete and len(result.trials) == len(schedule(protocol))
    return last[0] - start


def grid_cell(paths: ArchivePaths, base: dict, base_url: str, concurrency: int, latency: float,
              replicates: int, passes: int) -> dict:
    """Plain client and runner, alternating, ``passes`` times each, at one concurrency against one server."""
    import httpx

    from llmarchive.subjects.openai_compat import OpenAICompatSubject

    protocol = {**base, "n_per_scenario": replicates, "n": base["n_items"] * replicates,
                "protocol_id": f"bench_c{concurrency}_l{int(latency * 1000)}_{replicates}__wording__v0"}
    planned = schedule(protocol)
    prompts = {item["item_id"]: item["versions"] for item in protocol["panel"]}
    subject = OpenAICompatSubject("bench-model", protocol["generation"]["max_tokens"], base_url=base_url + "/v1")
    bodies = [subject.request_body(prompts[p.item_id][p.version]) for p in planned]
    plain_client(base_url, bodies[:concurrency * 2], concurrency)       # warm both sides
    plain_times, runner_times = [], []
    for number in range(passes):
        plain_times.append(plain_client(base_url, bodies, concurrency))
        runner_times.append(runner_pass(paths, protocol, subject, concurrency,
                                        f"bench-c-{concurrency}-{int(latency * 1000)}-{number}"))
    in_flight = httpx.get(base_url + "/stats").json()["max_in_flight"]
    calls = len(planned)
    ceiling = concurrency / latency if latency else None
    plain_rate, runner_rate = calls / min(plain_times), calls / min(runner_times)
    return {"concurrency": concurrency, "latency_ms": int(latency * 1000), "calls": calls,
            "plain": plain_rate, "runner": runner_rate, "ratio": runner_rate / plain_rate,
            "plain_share": plain_rate / ceiling if ceiling else None,
            "runner_share": runner_rate / ceiling if ceiling else None, "in_flight": in_flight}


def part_c(paths: ArchivePaths, concurrencies: list[int], latencies: list[float], passes: int,
           seconds: float, most: int) -> bool:
    base = registry.load_protocol(paths, PROTOCOL)
    print(f"(c) OpenAI-compatible path: run_protocol (OpenAICompatSubject, ledger reservations and charges, "
          f"chained fsynced trial log with group commit) against the best plain client (one-connection "
          f"httpx.AsyncClient per worker, same bodies), best of {passes} alternating passes; "
          "calls phase only (from run_protocol to the last trial made durable)")
    print(f"    {'conc':>4} {'latency':>7} {'calls':>5} {'plain/s':>8} {'runner/s':>8} {'ratio':>6} "
          f"{'plain ceil':>10} {'runner ceil':>11} {'in flight':>9}")
    ok = True
    for latency in latencies:
        server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(latency)],
                                  cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            base_url = server.stdout.readline().strip()
            for concurrency in concurrencies:
                cell = grid_cell(paths, base, base_url, concurrency, latency,
                                 cell_replicates(concurrency, latency, seconds, most), passes)
                share = (lambda x: "-" if x is None else f"{100 * x:.0f} %")
                print(f"    {concurrency:>4} {cell['latency_ms']:>5}ms {cell['calls']:>5} {cell['plain']:>8.0f} "
                      f"{cell['runner']:>8.0f} {cell['ratio']:>6.2f} {share(cell['plain_share']):>10} "
                      f"{share(cell['runner_share']):>11} {cell['in_flight']:>9}", flush=True)
                ok &= cell["ratio"] >= 0.9 and cell["in_flight"] <= concurrency
        finally:
            server.stdin.close()
            server.wait(timeout=10)
    print(f"    target: ratio >= 0.9 in every cell -> {'PASS' if ok else 'FAIL'}; "
          f"1-minute load average at the end {os.getloadavg()[0]:.1f}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("a", "b", "c", "all"), default="all")
    parser.add_argument("--items", type=int, default=3, help="(a) scenarios per run (4 trials each)")
    parser.add_argument("--rounds", type=int, default=1, help="(a) runs of the subset protocol")
    parser.add_argument("--max-tokens", type=int, help="(a) override the protocol's max_tokens")
    parser.add_argument("--latency", type=float, default=0.5, help="(b) seconds per fake call")
    parser.add_argument("--concurrency", type=int, default=8, help="(b) calls in flight")
    parser.add_argument("--grid-concurrency", type=int, nargs="+", default=list(GRID_CONCURRENCY),
                        help="(c) concurrencies of the grid")
    parser.add_argument("--grid-latency", type=float, nargs="+", default=list(GRID_LATENCY),
                        help="(c) server latencies of the grid, in seconds")
    parser.add_argument("--passes", type=int, default=3, help="(c) passes of the plain client and the runner per cell")
    parser.add_argument("--quick", action="store_true",
                        help="(c) two passes per cell, about 1 s of ideal time per pass, at most 960 calls")
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0
    passes, seconds, most = (2, 1.0, 16) if args.quick else (args.passes, 3.0, 32)
    ok = True
    with tempfile.TemporaryDirectory(prefix="runner-bench-") as home:
        paths = ArchivePaths.from_env(home).ensure()
        if args.part in ("b", "all"):
            ok &= part_b(paths, args.latency, args.concurrency)
        if args.part in ("c", "all"):
            ok &= part_c(paths, args.grid_concurrency, args.grid_latency, passes, seconds, most)
        if args.part in ("a", "all"):
            ok &= part_a(paths, args.items, args.rounds, args.max_tokens)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
