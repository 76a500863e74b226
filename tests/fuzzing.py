"""Fuzzing `nadc`: mutated block files and the checks every outcome must pass.

Shared by tests/test_fuzz.py (a few seeded cases in the suite) and benchmarks/fuzz_bench.py (many).
A case is an example file of the repository (examples/, the test fixtures) damaged by one to three
mutations drawn from a `random.Random`: characters, whole lines, huge numbers, Unicode, cycles,
large fan-in, many nodes, long lines. `check_case` runs `nadc verify`, `--emit torch` and `--emit
onnx` on it in process and returns what went wrong: an exit status other than 0, 1 or 2, an
internal error, or emitted torch source that does not compile (it is compiled, never run).
"""
from __future__ import annotations

import random
import re
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, NamedTuple

from conftest import REPO_ROOT, run_nadc

#: Seconds one command may take before the case counts as a hang (a guard, not a performance target).
HANG_S = 120


def seed_files() -> list[Path]:
    """The block files the cases start from, in a fixed order."""
    found = [*REPO_ROOT.glob("examples/*.nad"), *REPO_ROOT.glob("tests/golden/*/*.nad"),
             *REPO_ROOT.glob("tests/fixtures/**/*.nad")]
    return sorted(found)


_CHARS = list(",()->:=#-+*/_. \t\r\n0123456789AaCdimHWB") + [
    "é", "\u2192", "\u00a0", "\u0663", "\U0001d7d8", "\x00", "\ufb01", "\u200b", "\ufeff", "```", "##", "\\"]
_IDS = re.compile(r"^\s*([A-Za-z0-9_]+)\s*:", re.M)
_NUMBER = re.compile(r"[0-9]+")


def _ids(text: str) -> list[str]:
    return _IDS.findall(text) or ["0", "1", "2"]


def _huge(rng: random.Random) -> str:
    return str(rng.randint(1, 9)) + "".join(rng.choices("0123456789", k=rng.choice([33, 300, 4300, 4301, 6000])))


def _char(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    kind = rng.random()
    if kind < 0.4:
        return text[:at] + rng.choice(_CHARS) + text[at:]
    if kind < 0.7:
        return text[:at] + text[at + 1:]
    return text[:at] + rng.choice(_CHARS) + text[at + 1:]


def _line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.3:
        lines.insert(j, lines[i])
    elif kind < 0.6:
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _number(text: str, rng: random.Random) -> str:
    spots = list(_NUMBER.finditer(text))
    if not spots:
        return text + f"\n{_huge(rng)}:ReLU\n"
    spot = rng.choice(spots)
    return text[:spot.start()] + _huge(rng) + text[spot.end():]


def _unicode(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    junk = "".join(chr(rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800),
                                   rng.randrange(0x10000, 0x10FFFF)])) for _ in range(rng.randint(1, 5)))
    return text[:at] + junk + text[at:]


def _cycle(text: str, rng: random.Random) -> str:
    ids = _ids(text)
    a, b = rng.choice(ids), rng.choice(ids)
    return text.rstrip("\n") + f"\n{a}->{b}\n{b}->{a}\n"


def _fan_in(text: str, rng: random.Random) -> str:
    ids = _ids(text)
    count = rng.choice([65, 600, 3000, 3500])
    sources = [rng.choice(ids) for _ in range(count)]
    target = rng.choice(ids)
    op = rng.choice(["Add", "concat", "Mul"])
    if rng.random() < 0.5:
        edges = ",".join(sources) + f"->{target}\n"
    else:
        edges = "".join(f"{s}->{target}\n" for s in sources)
    return text.rstrip("\n") + f"\n{target}x:{op}\n" + edges.replace(f"->{target}\n", f"->{target}x\n") \
        + f"{target}x->{rng.choice(ids)}\n"


def _many_nodes(text: str, rng: random.Random) -> str:
    count = rng.choice([100, 2100, 5000])
    lines = "".join(f"n{i}:ReLU\nn{i}->n{i + 1}\n" for i in range(count))
    return text.rstrip("\n") + "\n" + lines


def _long_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    lines.insert(at, rng.choice(["# ", "2:Conv2d(", "0,", ""]) + "x" * rng.choice([4000, 5000, 100_000]))
    return "\n".join(lines)


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "char": _char, "line": _line, "number": _number, "unicode": _unicode, "cycle": _cycle,
    "fan-in": _fan_in, "many-nodes": _many_nodes, "long-line": _long_line,
}
# Character and line edits are the commonest damage; the rest each a little.
_WEIGHTS = {"char": 6, "line": 4, "number": 2, "unicode": 2, "cycle": 2, "fan-in": 1, "many-nodes": 1, "long-line": 1}


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """`text` damaged by one to three mutations, and their names."""
    names = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()), k=rng.randint(1, 3))
    for name in names:
        text = MUTATIONS[name](text, rng)
    return text, names


class Outcome(NamedTuple):
    failures: list[str]  # what went wrong; empty when the case passed
    seconds: float  # the slowest command


class Hang(Exception):
    pass


@contextmanager
def _guard(seconds: int):
    """Raises Hang in the main thread after `seconds` (SIGALRM)."""
    def expire(signum, frame):
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


COMMANDS = (("verify",), ("--emit", "torch"), ("--emit", "onnx"), ("fix",))


def check_case(path: Path, hang_s: int = HANG_S) -> Outcome:
    """Run the commands on `path`; the failures and the slowest command's time."""
    failures, slowest = [], 0.0
    for command in COMMANDS:
        argv = ["verify", str(path)] if command == ("verify",) else [str(path), *command]
        if command == ("fix",):
            argv = ["fix", "--unsafe", "--diff", str(path)]  # --diff: the case file stays as it is
        if command == ("--emit", "onnx"):
            argv += ["-o", str(path.with_suffix(".onnx"))]
        start = time.perf_counter()
        try:
            with _guard(hang_s):
                run = run_nadc(argv)
        except Hang:
            failures.append(f"{' '.join(command)}: no answer within {hang_s} s")
            continue
        except BaseException as error:  # noqa: BLE001 - main must never raise
            failures.append(f"{' '.join(command)}: raised {type(error).__name__}: {error}"[:300])
            continue
        finally:
            slowest = max(slowest, time.perf_counter() - start)
        if run.code not in (0, 1, 2):
            failures.append(f"{' '.join(command)}: exit {run.code}")
        if "internal error" in run.stderr:
            failures.append(f"{' '.join(command)}: {run.stderr.strip().splitlines()[0][:300]}")
        if command == ("--emit", "torch") and run.code == 0:
            try:
                compile(run.stdout, str(path), "exec")
            except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
                failures.append(f"--emit torch: the source does not compile: {type(error).__name__}: {error}"[:300])
    return Outcome(failures, slowest)
