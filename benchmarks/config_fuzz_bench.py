"""Fuzzing the configuration readers: tables (CSV, JSON), search.toml, [llm] files with profiles and
prices, and pyproject.toml's [tool.nadc.limits] (issue 30's "done when": 0 internal errors, 0 hangs).

Each case starts from a valid file of its reader, damaged by a few seeded mutations: bytes flipped,
invalid UTF-8, NUL, brackets nested thousands deep, numbers of thousands of digits, nan, inf,
negatives and out-of-range values in every key, wrong types, huge strings, truncation; or the
file is replaced by a special one (/dev/zero, a FIFO, a symlink loop, a folder). The reader runs
in a forked child (the parent imports everything first, so a fork costs milliseconds) with its
address space capped (`--memory-mib` above what the imports use) and a per-case timeout.

A case is *refused* when the reader raises its documented error (ConfigError, TableError,
LLMConfigError, LimitsError), *accepted* when it returns (tables: and every number it then answers
is finite, an accuracy in [0, 100]); an *internal error* is any other exception (MemoryError
included); a *hang* is a child still running at the timeout. A refusal whose message spans lines
or does not name the file is counted apart (`unnamed`).

    .venv/bin/python benchmarks/config_fuzz_bench.py --cases 1200 --seed 0

Prints one line per reader and a total line, then the first failures with their mutations. Exits 0.
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import resource
import select
import signal
import sys
import tempfile
import time
from pathlib import Path

from nader.agents.llm.config import load_config
from nader.agents.llm.errors import LLMConfigError
from nader.dsl.limits import LimitsError, limits_for
from nader.runtime.errors import ConfigError
from nader.search.config import merge
from nader.search.config_file import read_toml
from nader.search.tables.derived import FileTable
from nader.search.tables.base import TableError
from nader.search.spaces import nb201

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "resnet_basic.nad"
REFUSALS = (ConfigError, TableError, LLMConfigError, LimitsError)
READERS = ("table-csv", "table-json", "search-toml", "llm-toml", "pyproject-limits")


# -- valid files ---------------------------------------------------------------------------------
def _cells(rng: random.Random, n: int) -> list[str]:
    return [str(nb201.CellStructure(tuple(rng.choice(nb201.OPS) for _ in range(6)))) for _ in range(n)]


def valid_csv(rng):
    rows = [f"{c},{rng.uniform(10, 95):.2f},{rng.uniform(10, 95):.2f},{rng.uniform(5, 30):.1f},{rng.randint(1, 10**6)}"
            for c in _cells(rng, 5)]
    return "arch,valid_acc@12,test_acc@200,epoch_seconds,params\n" + "\n".join(rows) + "\n"


def valid_json(rng):
    return json.dumps({c: {"cifar10-valid": {"valid_acc@12": round(rng.uniform(10, 95), 2)},
                           "test_acc@200": round(rng.uniform(10, 95), 2)} for c in _cells(rng, 4)}, indent=1)


def valid_search_toml(rng):
    return (f'from = "{EXAMPLE}"\nstrategy = "rea"\ntrials = 5\n'
            f'seeds = [1, 2]\nseed = 3\ndepths = [1, 1, 1]\ntime-limit = "10m"\nmax-invalid = 4\nepochs = 2\n'
            f'prescreen = 0\nllm-max-cost = 0.5\nllm-max-tokens = 1000\n[strategy-options]\npopulation = 4\n'
            f'[train]\nlr = 0.1\n')


def valid_llm_toml(rng):
    return ('[llm]\nbase_url = "http://localhost:8000/v1"\nmodel = "Qwen/Qwen2.5"\nmax_tokens = 512\n'
            'temperature = 0.2\nrequest_timeout = 60\ndeadline = 300\nmax_retries = 2\nmax_cost_usd = 1.5\n'
            'max_total_tokens = 100000\n[llm.prices."Qwen/*"]\ninput = 0.1\noutput = 0.2\n'
            '[llm.profiles."qwen*"]\ntoken_param = "max_tokens"\ntemperature = true\njson = "none"\n'
            'system = "merge"\ncontext = 32768\nmax_tokens = 4096\n')


def valid_pyproject(rng):
    return ('[project]\nname = "x"\n[tool.nadc.limits]\nnodes-per-block = 500\nline-length = 4000\n'
            'digits-per-number = 12\ntext-bytes = 100000\n[tool.nadc.lint]\nselect = ["NAD401"]\n')


VALID = {"table-csv": valid_csv, "table-json": valid_json, "search-toml": valid_search_toml,
         "llm-toml": valid_llm_toml, "pyproject-limits": valid_pyproject}

# -- mutations -------------------------------------------------------------------------------------
HOSTILE_VALUES = ["nan", "inf", "-inf", "-50", "150", "0", "-1", "1e999", "9" * 5000, "99999999999999999999",
                  '"' + "x" * 200_000 + '"', "true", '"\udcff"', "[]", "{}", '"/dev/zero"', "-0.0", "1e-400",
                  "NaN", "Infinity", '"sim:nan"', '"10m"', '"sim:1e999"', '""', "0x10", "1_000"]


def _lines_with_values(text: str) -> list[int]:
    return [i for i, line in enumerate(text.split("\n")) if "=" in line or "," in line or ":" in line]


def m_value(text, rng):
    """Replace the value of one line (TOML `k = v`, CSV field, JSON `"k": v`) by a hostile one."""
    lines = text.split("\n")
    candidates = _lines_with_values(text)
    if not candidates:
        return text
    i = rng.choice(candidates)
    value = rng.choice(HOSTILE_VALUES)
    line = lines[i]
    if " = " in line:
        lines[i] = line.split(" = ", 1)[0] + " = " + value
    elif '": ' in line:
        head, _, tail = line.rpartition('": ')
        lines[i] = head + '": ' + value + ("," if tail.rstrip().endswith(",") else "")
    elif "," in line:
        parts = line.split(",")
        parts[rng.randrange(len(parts))] = value.strip('"')
        lines[i] = ",".join(parts)
    return "\n".join(lines)


def m_nest(text, rng):
    depth = rng.choice([100, 1000, 5000, 200_000])
    opener, closer = rng.choice([("[", "]"), ("{", "}"), ("{a = ", "}"), ("[[", "]]")])
    lines = text.split("\n")
    i = rng.randrange(len(lines) + 1)
    kind = rng.random()
    if kind < 0.5:
        lines.insert(i, "x = " + opener * depth + "1" + closer * depth)
    elif kind < 0.75:
        lines.insert(i, ".".join(["a"] * depth) + " = 1")
    else:
        lines.insert(i, opener * depth + closer * depth)
    return "\n".join(lines)


def m_bytes(text, rng):
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        data[rng.randrange(len(data))] = rng.choice([0, 0xFF, 0xC3, ord("["), ord('"'), ord("\n"), ord("\\"),
                                                     rng.randrange(256)])
    return data.decode("utf-8", "surrogateescape")  # written back with surrogatepass: bad bytes stay bad


def m_truncate(text, rng):
    return text[:rng.randrange(len(text) + 1)]


def m_field(text, rng):
    size = rng.choice([131_073, 200_000, 1_000_000])
    return text.replace("\n", "\n" + "y" * size + ",", 1) if rng.random() < 0.5 else text + "z" * size + "\n"


def m_duplicate(text, rng):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    return "\n".join(lines[:i] + [lines[i]] * rng.choice([2, 1000]) + lines[i:])


def m_unicode(text, rng):
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    lines[i] += rng.choice(["\u202e", "\ufeff", "\x00", "é" * 1000, "\ud800", "\r", "\x1b[2J"])
    return "\n".join(lines)


MUTATIONS = {"value": m_value, "nest": m_nest, "bytes": m_bytes, "truncate": m_truncate, "field": m_field,
             "duplicate": m_duplicate, "unicode": m_unicode}
WEIGHTS = {"value": 6, "nest": 2, "bytes": 2, "truncate": 1, "field": 1, "duplicate": 1, "unicode": 1}
SPECIAL = ("dev-zero", "fifo", "loop", "folder", "missing")


# -- one case ----------------------------------------------------------------------------------------
FILE_NAMES = {"table-csv": "t.csv", "table-json": "t.json", "search-toml": "search.toml", "llm-toml": "llm.toml",
              "pyproject-limits": "pyproject.toml"}


def make_case(reader: str, rng: random.Random, folder: Path) -> tuple[Path, list[str]]:
    path = folder / FILE_NAMES[reader]
    if rng.random() < 0.06:
        special = rng.choice(SPECIAL)
        if special == "dev-zero":
            path.symlink_to("/dev/zero")
        elif special == "fifo":
            os.mkfifo(path)
        elif special == "loop":
            path.symlink_to(path)
        elif special == "folder":
            path.mkdir()
        return path, [special]
    text = VALID[reader](rng)
    names = rng.choices(list(MUTATIONS), weights=[WEIGHTS[m] for m in MUTATIONS], k=rng.randint(1, 3))
    for name in names:
        text = MUTATIONS[name](text, rng)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))  # lone surrogates too: invalid UTF-8
    return path, names


def read(reader: str, path: Path) -> str:
    """Run the reader as the product does; 'accepted' or raises."""
    if reader.startswith("table"):
        table = FileTable(path)
        table.summary("cifar10-valid")
        for cell in list(table.rows)[:5]:
            try:
                record = table.evaluate(cell, "cifar10-valid", 12, test_epochs=200)
            except TableError:
                continue
            for value in (record.valid_acc, record.test_acc):
                if value is not None and not (math.isfinite(value) and 0 <= value <= 100):
                    raise AssertionError(f"accuracy {value} answered")
            if record.seconds is not None and not (math.isfinite(record.seconds) and record.seconds >= 0):
                raise AssertionError(f"seconds {record.seconds} answered")
    elif reader == "search-toml":
        settings = read_toml(path)  # a refusal here must name the file
        try:
            merge(settings).check()
        except ConfigError as exc:  # the merged settings' checks name the setting: a flag or the file's
            return f"checked: {exc}"
    elif reader == "llm-toml":
        load_config(path)
    else:
        (path.parent / "b.nad").write_text("##B##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n")
        limits_for(str(path.parent / "b.nad"))
    return "accepted"


def child(reader: str, path: Path, memory_bytes: int, fd: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        result = read(reader, path)
        outcome = {"kind": "refused"} if result.startswith("checked") else {"kind": result}
    except REFUSALS as exc:
        message = str(exc)
        named = "\n" not in message and (str(path) in message or path.name in message)
        outcome = {"kind": "refused" if named else "unnamed", "message": message[:300]}
    except BaseException as exc:  # noqa: BLE001 - what the benchmark counts
        outcome = {"kind": "internal", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}
    os.write(fd, json.dumps(outcome).encode()[:4000])
    os._exit(0)


def run_case(reader: str, path: Path, timeout: float, memory_bytes: int) -> dict:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        child(reader, path, memory_bytes, wfd)
    os.close(wfd)
    ready, _, _ = select.select([rfd], [], [], timeout)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(rfd)
        return {"kind": "hang"}
    data = b""
    while chunk := os.read(rfd, 4096):
        data += chunk
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"kind": "internal", "message": f"the child died (status {status})"}
    return json.loads(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1200, help="cases in all, shared among the readers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=20.0, help="seconds before a case counts as a hang")
    parser.add_argument("--memory-mib", type=int, default=1024, help="address space a case may add to the imports'")
    args = parser.parse_args()

    vm = int(Path("/proc/self/status").read_text().split("VmSize:")[1].split()[0]) * 1024
    memory = vm + args.memory_mib * 2**20
    rng = random.Random(args.seed)
    counts = {r: collections.Counter() for r in READERS}
    failures = []
    slowest = (0.0, None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(args.cases):
            reader = READERS[case % len(READERS)]
            folder = Path(tmp) / f"case{case}"
            folder.mkdir()
            path, mutations = make_case(reader, rng, folder)
            began = time.perf_counter()
            outcome = run_case(reader, path, args.timeout_s, memory)
            seconds = time.perf_counter() - began
            if seconds > slowest[0]:
                slowest = (seconds, f"case {case} ({reader}, {'+'.join(mutations)})")
            counts[reader][outcome["kind"]] += 1
            if outcome["kind"] in ("internal", "hang", "unnamed"):
                failures.append((case, reader, mutations, outcome))
            _remove(folder)
    elapsed = time.perf_counter() - started
    total = collections.Counter()
    for reader in READERS:
        c = counts[reader]
        total.update(c)
        print(f"{reader:17} {sum(c.values()):5} cases: {c['accepted']:4} accepted, {c['refused']:4} refused, "
              f"{c['unnamed']:3} unnamed, {c['internal']:3} internal errors, {c['hang']:3} hangs")
    print(f"config fuzz: {sum(total.values())} cases (seed {args.seed}): {total['internal']} internal errors, "
          f"{total['hang']} hangs, {total['unnamed']} refusals not naming the file; {total['accepted']} accepted, "
          f"{total['refused']} refused; slowest {slowest[1]} {slowest[0]:.2f} s; {elapsed:.0f} s in all")
    for case, reader, mutations, outcome in failures[:30]:
        print(f"  case {case} {reader} ({'+'.join(mutations)}): {outcome['kind']}: {outcome.get('message', '')[:200]}")


def _remove(folder: Path) -> None:
    for item in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if item.is_dir() and not item.is_symlink():
            item.rmdir()
        else:
            item.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
