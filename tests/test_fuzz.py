"""Fuzzing in the suite: a few seeded mutated block files through `nadc` (benchmarks/fuzz_bench.py runs many).

Every case must end with exit status 0, 1 or 2, no internal error, and emitted torch source that
compiles (compiled, never run); a command gets a generous hang guard, not a time target.
"""
from __future__ import annotations

import random

from fuzzing import MUTATIONS, check_case, mutate, seed_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEEDS = seed_files()


def test_there_are_files_to_start_from():
    assert len(SEEDS) >= 10


@settings(max_examples=8, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(origin=st.sampled_from(SEEDS), seed=st.integers(0, 2**32 - 1))
def test_mutated_files_never_break_nadc(tmp_path_factory, origin, seed):
    text, mutations = mutate(origin.read_bytes().decode("utf-8", "surrogateescape"), random.Random(seed))
    path = tmp_path_factory.mktemp("fuzz") / "case.nad"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    outcome = check_case(path)
    assert not outcome.failures, f"{origin.name} + {mutations}: {outcome.failures}"


def test_each_mutation_changes_the_text():
    """Each mutation kind, on its own, is exercised and does damage (the cases above mix them)."""
    text = SEEDS[0].read_text(encoding="utf-8")
    for name, mutation in MUTATIONS.items():
        assert any(mutation(text, random.Random(k)) != text for k in range(5)), name


def test_found_by_fuzzing_a_block_defined_twice_keeps_its_own_diagnostics(tmp_path):
    """fuzz_bench --seed 41, case 2052: a duplicated header; the second block's unknown symbol was
    attributed to the first (by name) and then broke shape inference (KeyError, an internal error)."""
    from conftest import run_nadc

    path = tmp_path / "twice.nad"
    path.write_text("##R##\n##R##\n0:input\n1:output\n2:Conv2d(out_channels=c*2,kernel_size=3)\n0->2\n2->1\n")
    run = run_nadc(["verify", str(path), "--format", "concise"])
    assert run.code == 1 and "internal error" not in run.stderr
    assert "error[NAD109] unknown symbol `c`" in run.stdout + run.stderr


def test_found_by_fuzzing_the_first_line_of_a_file_without_a_header_keeps_its_diagnostics(tmp_path):
    """fuzz_bench --seed 41, case 44 (`nadc fix` of a mutated file): with no header, the first node line's
    problems were emitted before its implicit block opened, so they belonged to no block; its unknown
    symbol then broke shape inference (KeyError, an internal error, already in `nadc verify`)."""
    from conftest import run_nadc

    path = tmp_path / "headless.nad"
    path.write_text("2:Conv2d(yy,kernel_size=3)\n0:input\n1:output\n0->2\n2->1\n")
    run = run_nadc(["verify", str(path), "--format", "concise"])
    assert run.code == 1 and "internal error" not in run.stderr, run.stderr
    assert "error[NAD109] unknown symbol `yy`" in run.stdout + run.stderr
    fixed = run_nadc(["fix", "--unsafe", "--diff", str(path)])
    assert fixed.code in (0, 1) and "internal error" not in fixed.stderr, fixed.stderr
