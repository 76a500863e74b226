"""Verification speed on blocks the process has never seen: API, CLI and one block cold.

Input (written to a temporary folder, one file per architecture):
* the compatibility corpus (`../shared/nader-compat`, 100 files: NADER's reference
  architectures and the blocks of its fail-to-success log), when present;
* generated files up to `--files` (default 1,000): each holds a base, a `_stem` and a
  `_downsample` block, drawn independently from the test suite's strategies (tests/strategies.py:
  `sound_blocks`, and `blocks` for one base block in five) and turned into the stem and
  downsample roles here; about one file in three is then damaged by the `mutated` strategy (one
  to three random edits), as agents' failing replies are. No two blocks repeat; the share of
  distinct lines is printed.

Figures, each from fresh processes (nothing cached from an earlier run):
* API: `parse` + `verify_program` over every file, in one process, after imports;
* CLI: `nadc verify --format json FILE...` over all files in one invocation (each stem at the
  stride it has, as networks take it: the corpus' ImageNet-style stems verify at 4),
  wall time from process start to exit, with the worker processes `nadc` starts over many files
  (one per idle core) and, separately, in a single process (`--jobs 1`);
* one block: wall time of `nadc verify --format json ONE.nad` from process start, median of
  `--cold-runs` runs, each on a different unseen block; the median of those with a syntax error
  (which need Lark) is printed apart;
* repairs: `nadc verify --format json --jobs 1` over all files with repairs on (the default) against
  `--no-fixes`, CPU time, the median of `--repair-pairs` alternating pairs' ratios (issue 39's target:
  at most 1.2x);
* repeated input (labelled): the API on the same corpus again and again, which measures the
  caches, not unseen blocks;
* with `--instructions` (needs valgrind): the instructions the CLI runs, counted by cachegrind.
  Unlike times, counts do not move with a busy or throttled machine, so they compare two
  versions of the code exactly; they do not count time lost to page faults or waiting. The
  repairs' ratio is counted too.

`--nader-repo PATH` (a checkout of github.com/yang-ze-kang/NADER) also times NADER's own
checker on the same blocks, in the same run, and prints the ratios; without it the ratio is
against NADER_RECORDED, a figure measured in an earlier session, and says so.
Targets on the 2-core development machine: CLI >= 10x NADER's checker (stretch 30x); one block
from process start <= 150 ms. Prints one summary line first, details after. Exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from corpus import corpus, shared_dir  # noqa: E402

#: Child processes run as installed code does: with bytecode (pip compiles it on install).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
#: NADER's checker in an earlier session, on 8,700 agent-written blocks (blocks/s).
NADER_RECORDED = 750
CLI_TARGET_X, CLI_STRETCH_X, COLD_TARGET_MS = 10, 30, 150
#: Issue 39: `nadc verify` with its repairs (the default) costs at most this many times `--no-fixes`.
REPAIR_TARGET_X = 1.2


# -- input -------------------------------------------------------------------------

def generated_files(count: int, seed: int) -> list[str]:
    """`count` file texts of base, stem and downsample blocks, no two blocks alike.

    The test suite's strategies are drawn from directly with a seeded random source (hypothesis'
    `ConjectureData`, pinned in constraints.txt): its test engine starts from minimal examples
    and would spend most of the time on duplicates.
    """
    import random

    sys.path.insert(0, str(ROOT / "tests"))
    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData
    from strategies import blocks, sound_blocks
    from text_strategies import mutated

    from nader.dsl.format import format_block

    rnd = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < count:
        data = ConjectureData(random=rnd)
        with BuildContext(data, wrapped_test=None):
            name = f"G{len(texts)}"
            # One base block in five is an arbitrary graph of registered operations (rarely valid).
            base = data.draw(blocks(cell=False, max_nodes=10, with_comments=False, name=name) if rnd.random() < 0.2
                             else sound_blocks(max_steps=10, name=name))
            stem = _in_role(data.draw(sound_blocks(max_steps=6, name=name + "_stem")), stride=1)
            down = _in_role(data.draw(sound_blocks(max_steps=8, name=name + "_downsample")), stride=2)
            bodies = [format_block(b).split("\n", 1)[1] for b in (base, stem, down)]  # without the header
            if any(b in seen for b in bodies):
                continue
            seen.update(bodies)
            text = "".join(format_block(b) + "\n" for b in (base, stem, down))
            # One file in three is damaged as failing agent replies are.
            texts.append(data.draw(mutated(text)) if rnd.random() < 1 / 3 else text)
    return texts


def _in_role(block, stride: int):
    """A base block turned into a stem or downsample one: a strided projection to `dim`
    channels first, the rest counted in `dim`."""
    from dataclasses import replace

    from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue
    from nader.dsl.ir import Arg, Edge, Node

    def in_dim(v):
        if isinstance(v, Sym):
            return Sym("dim") if v.name == "C" else v
        if isinstance(v, BinOp):
            return BinOp(v.op, in_dim(v.lhs), in_dim(v.rhs))
        if isinstance(v, Neg):
            return Neg(in_dim(v.operand))
        if isinstance(v, TupleValue):
            return TupleValue(tuple(in_dim(i) for i in v.items))
        return v

    first = max(n.id for n in block.nodes) + 1
    nodes = [Node(n.id, n.op_name, tuple(Arg(a.name, in_dim(a.value)) for a in n.args)) for n in block.nodes]
    nodes.insert(2, Node(first, "Conv2d", (Arg("out_channels", Sym("dim")), Arg("kernel_size", Num(3)),
                                           Arg("stride", Num(stride)))))
    edges = [Edge((0,), first)] + [Edge(tuple(first if s == 0 else s for s in e.sources), e.target)
                                   for e in block.edges]
    return replace(block, nodes=tuple(nodes), edges=tuple(edges))


def write_inputs(folder: Path, files: int, seed: int) -> list[tuple[Path, int]]:
    """Write the corpus and the generated files; returns (path, stem stride) per file."""
    written: list[tuple[Path, int]] = []
    shared = shared_dir()
    if shared is not None:
        for k, (_, text, stride) in enumerate(corpus(shared / "nader-compat")):
            path = folder / f"corpus{k:03d}.nad"
            path.write_text(text, encoding="utf-8")
            written.append((path, stride))
    for k, text in enumerate(generated_files(files - len(written), seed)):
        path = folder / f"gen{k:04d}.nad"
        path.write_text(text, encoding="utf-8")
        written.append((path, 1))
    return written


def line_stats(paths) -> tuple[int, int]:
    lines = [line.strip() for p, _ in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return len(lines), len(set(lines))


# -- NADER's checker -----------------------------------------------------------------

def nader_sections(text: str) -> list[str]:
    """The block texts NADER checks one at a time: from one `##Name##` line to the next."""
    sections, current = [], None
    for line in text.splitlines():
        if re.match(r"^\s*##.*##\s*$", line):
            current = [line]
            sections.append(current)
        elif current is not None:
            current.append(line)
    return ["\n".join(s) for s in sections]


def load_nader_checker(repo: Path):
    """NADER's block checker from a checkout of its repository.

    In yang-ze-kang/NADER a block is checked by `BlockFactory.check(text)` (module
    `nader/ModelFactory/block_factory.py`, imported as `ModelFactory.block_factory`; found here
    by its `class BlockFactory`). `check` parses the text with regular expressions, builds a
    networkx graph, checks that it is a DAG with one input and one output, and evaluates every
    node's shape at one sample size with `eval`; it returns `{'error': message}` for a bad block
    and -1 for a good one not yet in its database. NADER's `BlockGen` keeps one factory per role,
    `BlockFactory(type=base|stem|downsample, mode=nas-bench|darts, stem_down_scale=s)`, and
    checks a file's blocks one by one; so does this adapter. Modules the checker imports but
    never calls in `check` (graphviz, pandas) are stubbed when they are not installed.
    """
    import importlib.util
    import types

    found = [p for p in sorted(repo.rglob("*.py"))
             if ".git" not in p.parts and "class BlockFactory" in p.read_text(encoding="utf-8", errors="ignore")]
    if not found:
        raise SystemExit(f"verify: no `class BlockFactory` under {repo}; is it a checkout of NADER?")
    path = found[0]
    for name in ("graphviz", "pandas"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    for entry in (str(path.parent), str(path.parent.parent)):  # `ModelFactory.*` and sibling imports
        if entry not in sys.path:
            sys.path.insert(0, entry)
    spec = importlib.util.spec_from_file_location("nader_block_factory", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    factories: dict[tuple, object] = {}

    def check(text: str, stride: int):
        header = text.split("\n", 1)[0].lower()
        cell = "input1" in text or "input2" in text
        kind = "stem" if "stem" in header else "downsample" if ("downsample" in header or "reduction" in header) \
            else "base"
        key = (kind, cell, stride)
        if key not in factories:
            factories[key] = module.BlockFactory(type=kind, mode="darts" if cell else "nas-bench",
                                                 stem_down_scale=stride)
        return factories[key].check(text)

    return check, path


# -- child processes (each measures in a fresh interpreter) ----------------------------

def child_api(manifest: Path) -> dict:
    entries = json.loads(manifest.read_text())
    texts = [(Path(p).read_text(encoding="utf-8"), p, s) for p, s in entries]
    start = time.perf_counter()
    from nader.compiler.passes import verify_program
    from nader.dsl.parser import parse
    imported = time.perf_counter()
    cpu = time.process_time()
    blocks, parse_s = 0, 0.0
    for text, path, stride in texts:
        before = time.perf_counter()
        parsed = parse(text, path)
        parse_s += time.perf_counter() - before
        reports, _ = verify_program(parsed, stem_stride=stride)
        blocks += len(reports)
    done = time.perf_counter()
    return {"blocks": blocks, "seconds": done - imported, "cpu_seconds": time.process_time() - cpu,
            "parse_seconds": parse_s, "import_seconds": imported - start}


def child_repeated(manifest: Path, rounds: int) -> dict:
    entries = json.loads(manifest.read_text())
    texts = [(Path(p).read_text(encoding="utf-8"), p, s) for p, s in entries]
    from nader.compiler.passes import verify_program
    from nader.dsl.parser import parse
    for text, path, stride in texts:  # the first pass fills the caches
        verify_program(parse(text, path), stem_stride=stride)
    blocks = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for text, path, stride in texts:
            blocks += len(verify_program(parse(text, path), stem_stride=stride)[0])
    return {"blocks": blocks, "seconds": time.perf_counter() - start}


def child_nader(manifest: Path, repo: Path) -> dict:
    check, path = load_nader_checker(repo)
    entries = json.loads(manifest.read_text())
    work = [(section, s) for p, s in entries for section in nader_sections(Path(p).read_text(encoding="utf-8"))]
    errors = 0
    start, cpu = time.perf_counter(), time.process_time()
    for text, stride in work:
        result = check(text, stride)
        errors += isinstance(result, dict)
    return {"blocks": len(work), "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
            "rejected": errors, "module": str(path)}


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=ROOT,
                          env=ENV)
    if done.returncode != 0:
        raise SystemExit(f"verify: child {args[0]} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the CLI -----------------------------------------------------------------------

def nadc() -> str:
    exe = Path(sys.executable).parent / "nadc"
    return str(exe) if exe.exists() else "nadc"


def timed(command: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run a command; its wall seconds, and its CPU seconds (user + system), which a machine
    shared with other work disturbs less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cli_run(paths: list[tuple[Path, int]], jobs: list[str]) -> tuple[int, float, float]:
    """Blocks reported, wall and CPU seconds of one `nadc verify --format json` over every file, each
    stem at the stride it has (`jobs`: extra options, e.g. `--jobs 1` for a single process)."""
    done, wall, cpu = timed([nadc(), "verify", "--format", "json", *jobs, *(str(p) for p, _ in paths)])
    if done.returncode not in (0, 1):
        raise SystemExit(f"verify: nadc failed (exit {done.returncode}): {done.stderr.strip()}")
    return sum(1 for o in json.loads(done.stdout) if o["block"] is not None), wall, cpu


def repair_pairs(paths: list[tuple[Path, int]], pairs: int) -> tuple[float, float, float]:
    """(the median ratio, the median CPU seconds with and without) of `pairs` runs of `nadc verify --format json
    --jobs 1` with repairs (the default) and `--no-fixes`, in turn, so that a machine's drift touches both alike."""
    files = [str(p) for p, _ in paths]
    ratios, with_cpu, without_cpu = [], [], []
    for _ in range(pairs):
        with_cpu.append(timed([nadc(), "verify", "--format", "json", "--jobs", "1", *files])[2])
        without_cpu.append(timed([nadc(), "verify", "--no-fixes", "--format", "json", "--jobs", "1", *files])[2])
        ratios.append(with_cpu[-1] / without_cpu[-1])
    return statistics.median(ratios), statistics.median(with_cpu), statistics.median(without_cpu)


def cold_single(folder: Path, sources: list[Path], runs: int) -> tuple[list[float], list[float], list[float]]:
    """Wall and CPU ms of `nadc verify --format json` on one unseen block, a fresh process each; and
    the wall ms of the runs whose block has a syntax error (NAD1xx: the front end needs Lark)."""
    walls, cpus, broken = [], [], []
    for k, source in enumerate(sources[:runs]):
        path = folder / f"single{k}.nad"
        path.write_text(nader_sections(source.read_text(encoding="utf-8"))[-1] + "\n", encoding="utf-8")
        done, wall, cpu = timed([nadc(), "verify", "--format", "json", str(path)])
        walls.append(wall * 1000)
        cpus.append(cpu * 1000)
        if any(d["code"].startswith("NAD1") and d["severity"] == "error"
               for o in json.loads(done.stdout) for d in o["diagnostics"]):
            broken.append(wall * 1000)
    return walls, cpus, broken


def instructions(command: list[str]) -> list[int]:
    """Instructions run by each process of `command` (forked workers included), counted by valgrind."""
    with tempfile.TemporaryDirectory(prefix="verify_bench_cg_") as out:
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                               f"--cachegrind-out-file={out}/cg.%p", *command], capture_output=True, text=True, env=ENV)
    counts = [int(n.replace(",", "")) for n in re.findall(r"I\s+refs:\s+([\d,]+)", done.stderr)]
    if done.returncode not in (0, 1) or not counts:
        raise SystemExit(f"verify: valgrind failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return counts


def instruction_figures(paths: list[tuple[Path, int]], source: Path, folder: Path, blocks: int) -> str:
    """The CLI's instructions: per block over all files, and one block (the last of `source`) from process start."""
    if shutil.which("valgrind") is None:
        return "  instructions: not counted (valgrind is not installed)"
    single = folder / "counted.nad"
    single.write_text(nader_sections(source.read_text(encoding="utf-8"))[-1] + "\n", encoding="utf-8")
    start_up = sum(instructions([nadc(), "verify", "--format", "json", str(single)]))
    python = sum(instructions([sys.executable, "-c", "pass"]))
    one_process = sum(instructions([nadc(), "verify", "--format", "json", "--jobs", "1", *(str(p) for p, _ in paths)]))
    no_fixes = sum(instructions([nadc(), "verify", "--no-fixes", "--format", "json", "--jobs", "1",
                                 *(str(p) for p, _ in paths)]))
    # Not counted with workers: a forked child's count starts from its parent's at the fork, and
    # how the processes share the files depends on their speed, which valgrind distorts.
    return (f"  instructions (valgrind; exact, unlike the times): CLI {one_process / blocks / 1e3:,.0f} k per block in one "
            f"process (`--jobs 1`), start-up included; one block from process start {start_up / 1e6:,.0f} M "
            f"(`python -c pass` {python / 1e6:,.0f} M); with repairs / `--no-fixes` {one_process / 1e6:,.0f} / "
            f"{no_fixes / 1e6:,.0f} M, {one_process / no_fixes:.3f}x")


def interpreter_ms(runs: int) -> float:
    return statistics.median(timed([sys.executable, "-c", "pass"])[1] * 1000 for _ in range(runs))


# -- main --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000, help="files in all, corpus included (default 1000)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000,
                    help="seed of the generated blocks (the same blocks for the same code: hypothesis also draws "
                         "constants from the loaded modules)")
    ap.add_argument("--cold-runs", type=int, default=9, help="runs of the one-block cold start (median)")
    ap.add_argument("--nader-repo", type=Path, default=None, help="a checkout of NADER's repository")
    ap.add_argument("--keep", type=Path, default=None, help="write the inputs here and keep them")
    ap.add_argument("--inputs", type=Path, default=None,
                    help="reuse the inputs a --keep run wrote (to compare two versions on the same blocks)")
    ap.add_argument("--instructions", action="store_true",
                    help="also count the CLI's instructions with valgrind (about a minute more)")
    ap.add_argument("--repair-pairs", type=int, default=5,
                    help="alternating runs with and without repairs for their CPU-time ratio (default 5; 0: none)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, manifest, *rest = args.child
        result = {"api": lambda: child_api(Path(manifest)),
                  "repeated": lambda: child_repeated(Path(manifest), int(rest[0])),
                  "nader": lambda: child_nader(Path(manifest), Path(rest[0]))}[kind]()
        print(json.dumps(result))
        return 0

    with tempfile.TemporaryDirectory(prefix="verify_bench_") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        if args.inputs:
            paths = [(Path(p), s) for p, s in json.loads((args.inputs / "manifest.json").read_text())]
        else:
            paths = write_inputs(folder, args.files, args.seed)
        generated_s = time.perf_counter() - start
        manifest = folder / "manifest.json"
        manifest.write_text(json.dumps([(str(p), s) for p, s in paths]))
        total_lines, distinct_lines = line_stats(paths)

        # One warm-up run writes the bytecode and Lark's grammar cache, as any first use does.
        timed([nadc(), "verify", "--format", "json", str(paths[0][0])])
        api = run_child("api", str(manifest))
        cli_blocks, cli_wall, cli_cpu = cli_run(paths, [])
        one_blocks, one_wall, one_cpu = cli_run(paths, ["--jobs", "1"])
        singles = [p for p, _ in paths if p.name.startswith("gen")] or [p for p, _ in paths]
        cold_wall, cold_cpu, cold_broken = cold_single(folder, singles, args.cold_runs)
        repairs = repair_pairs(paths, args.repair_pairs) if args.repair_pairs > 0 else None
        python_ms = interpreter_ms(5)
        corpus = [(str(p), s) for p, s in paths if p.name.startswith("corpus")]
        repeated = None
        if corpus:
            (folder / "corpus.json").write_text(json.dumps(corpus))
            repeated = run_child("repeated", str(folder / "corpus.json"), "20")
        nader = run_child("nader", str(manifest), str(args.nader_repo)) if args.nader_repo else None
        counted = instruction_figures(paths, singles[0], folder, cli_blocks) if args.instructions else None

    api_rate = api["blocks"] / api["seconds"]
    cli_rate, cli_cpu_rate = cli_blocks / cli_wall, cli_blocks / cli_cpu
    one_rate, one_cpu_rate = one_blocks / one_wall, one_blocks / one_cpu
    cold_ms, cold_cpu_ms = statistics.median(cold_wall), statistics.median(cold_cpu)
    if nader:
        anchor = nader["blocks"] / nader["seconds"]
        anchor_text = (f"NADER's checker, measured in this run: {nader['blocks']} blocks in {nader['seconds']:.2f} s "
                       f"({nader['blocks'] / nader['cpu_seconds']:,.0f}/s by CPU), {nader['rejected']} rejected; "
                       f"{nader['module']}; API {api_rate / anchor:.1f}x; by CPU time CLI "
                       f"{cli_cpu_rate / (nader['blocks'] / nader['cpu_seconds']):.1f}x")
    else:
        anchor, anchor_text = NADER_RECORDED, "NADER's checker as recorded earlier, NOT measured in this run (no --nader-repo)"
    ratio = cli_rate / anchor
    verdict = "meets the stretch" if ratio >= CLI_STRETCH_X else "meets" if ratio >= CLI_TARGET_X else "MISSES"
    cold_verdict = "meets" if cold_ms <= COLD_TARGET_MS else "MISSES"
    print(f"verify: CLI {cli_rate:,.0f} blocks/s on unseen blocks ({ratio:.1f}x NADER's {anchor:,.0f}/s: {verdict} "
          f"the {CLI_TARGET_X}x target; single process {one_rate:,.0f}/s, {one_rate / anchor:.1f}x), "
          f"API {api_rate:,.0f} blocks/s, one block from process start {cold_ms:.0f} ms "
          f"({cold_verdict} the {COLD_TARGET_MS} ms target); by CPU time: CLI single process {one_cpu_rate:,.0f}/s, "
          f"API {api['blocks'] / api['cpu_seconds']:,.0f}/s, one block {cold_cpu_ms:.0f} ms")
    print(f"  input: {len(paths)} files, {api['blocks']} blocks, {distinct_lines:,} distinct of {total_lines:,} "
          f"non-blank lines (" + (f"from {args.inputs}" if args.inputs else
                                  f"seed {args.seed}; generated in {generated_s:.1f} s") + ")")
    print(f"  API: {api['blocks']} blocks in {api['seconds']:.2f} s wall ({api['blocks'] / api['cpu_seconds']:,.0f}/s "
          f"by CPU), one fresh process, imports ({api['import_seconds'] * 1000:.0f} ms) not counted; parsing "
          f"{100 * api['parse_seconds'] / api['seconds']:.0f}% of it, verifying the rest")
    print(f"  CLI: nadc verify --format json, {cli_blocks} blocks in {cli_wall:.2f} s wall ({cli_cpu_rate:,.0f}/s by "
          f"CPU, all processes), one invocation, start-up included, "
          f"worker processes as `nadc` chooses them ({os.cpu_count()} cores); with --jobs 1: {one_wall:.2f} s wall, "
          f"{one_cpu_rate:,.0f}/s by CPU")
    if repairs:
        print(f"  repairs: `nadc verify --format json --jobs 1` with repairs (the default) / `--no-fixes`, CPU "
              f"{repairs[1]:.2f} / {repairs[2]:.2f} s, {repairs[0]:.3f}x, the median of {args.repair_pairs} alternating "
              f"pairs ({'meets' if repairs[0] <= REPAIR_TARGET_X else 'MISSES'} the {REPAIR_TARGET_X}x target)")
    print(f"  one block: median {cold_ms:.0f} ms wall ({cold_cpu_ms:.0f} ms CPU) over {len(cold_wall)} fresh "
          f"processes, min {min(cold_wall):.0f}, max {max(cold_wall):.0f}; bare `python -c pass`: {python_ms:.0f} ms; "
          + (f"{len(cold_broken)} of them with a syntax error (Lark needed): median {statistics.median(cold_broken):.0f} ms"
             if cold_broken else "none with a syntax error"))
    print(f"  anchor: {anchor_text}")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (wall figures suffer when "
          f"it exceeds the cores; the CPU figures much less)")
    if counted:
        print(counted)
    if repeated:
        print(f"  repeated input, NOT unseen (measures the caches): {repeated['blocks'] / repeated['seconds']:,.0f} "
              f"blocks/s, the corpus verified 20 more times in one process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
