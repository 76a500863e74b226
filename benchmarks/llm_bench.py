"""LLM client overhead per call, against the loopback server of the tests (no network).

Side by side in one process, interleaved round by round, each call with a prompt never asked
before (no cache hit):
* **raw**: `openai.AsyncOpenAI.chat.completions.create` alone (the anchor: HTTP, JSON, the SDK);
* **client**: `LLMClient.chat` with a record in a temporary run (profile, key, caps, accounting,
  retry bookkeeping, the SQLite row);
* **cached**: `LLMClient.chat` of a later session of the same run, answered from the record
  (labelled: it repeats the prompts the client just asked).
The overhead is client minus raw, per call; a real model answers in 0.5 s to a minute.
Also printed: the first call of a cold client (mostly importing `openai`).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from loopback import LoopbackServer, reply  # noqa: E402  (the test double)


def messages(i: int) -> list[dict]:
    return [{"role": "system", "content": "You answer with JSON only."},
            {"role": "user", "content": f"Question {i}: propose a block with {i % 7} branches. " * 8}]


async def bench(server, rounds: int, per_round: int) -> dict:
    import openai

    from nader.agents.llm import LLMClient, LLMConfig

    raw = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    run = tempfile.mkdtemp(prefix="llm-bench-")
    config = LLMConfig(base_url=server.base_url, model="bench", max_tokens=256, temperature=0.7)
    client = LLMClient.from_config(config, store=run)
    # A later session of the same run: its first identical request is answered from the record.
    later = LLMClient.from_config(config, store=run)
    times = {"raw": [], "client": [], "cached": []}
    counter = 0
    for _ in range(rounds):
        for kind in ("raw", "client", "cached"):
            for _ in range(per_round):
                counter += 1
                started = time.perf_counter()
                if kind == "raw":
                    await raw.chat.completions.create(model="bench", messages=messages(counter), max_tokens=256,
                                                      temperature=0.7)
                elif kind == "client":
                    await client.chat(messages(counter), role="bench", arch_id=str(counter % 10))
                else:
                    await later.chat(messages(counter - per_round), role="bench")  # the client's batch
                times[kind].append(time.perf_counter() - started)
    await raw.close()
    for c in (client, later):
        await c.aclose()
        c.close()
    return {k: statistics.median(v) for k, v in times.items()}


def cold_first_call(server) -> float:
    import subprocess

    code = ("import time; t=time.perf_counter();"
            "from nader.agents.llm import LLMClient, LLMConfig;"
            f"c=LLMClient.from_config(LLMConfig(base_url='{server.base_url}', model='bench'));"
            "c.chat_sync([{'role':'user','content':'cold'}]); print(time.perf_counter()-t); c.close()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=20)
    args = parser.parse_args(argv)
    with LoopbackServer(responder=lambda body: reply('{"block": "ok"}', usage=(120, 8)),
                        models=[{"id": "bench"}]) as server:  # the name the client asks for, listed
        medians = asyncio.run(bench(server, args.rounds, args.per_round))
        cold = cold_first_call(server)
    overhead = medians["client"] - medians["raw"]
    print(f"llm: client overhead {overhead * 1e3:.2f} ms/call (client {medians['client'] * 1e3:.2f} ms vs raw openai"
          f" {medians['raw'] * 1e3:.2f} ms, median of {args.rounds * args.per_round} unseen prompts each, loopback);"
          f" {overhead / 1.0 * 100:.2f}% of a 1 s LLM reply; answered from the record (cache, repeated prompts)"
          f" {medians['cached'] * 1e3:.2f} ms; cold process first call {cold:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
