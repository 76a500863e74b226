"""The benchmarks that draw their unseen inputs from the test suite's strategies still draw them:
`verify_bench.py` and `parse_bench.py` import tests/strategies.py and tests/text_strategies.py by
name, so a moved strategy breaks them where no benchmark runs in the suite (it did once)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from nader.dsl.parser import parse

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_verify_bench_draws_distinct_files_of_three_roles():
    texts = _load("verify_bench").generated_files(6, seed=3)
    assert len(texts) == 6 and len(set(texts)) == 6
    for text in texts:
        names = [b.name for b in parse(text).program.blocks]
        assert len(names) == 3 and names[1].endswith("_stem") and names[2].endswith("_downsample"), names


@pytest.mark.parametrize("seed", [1, 2])
def test_parse_bench_draws_the_same_texts_for_a_seed(seed):
    bench = _load("parse_bench")
    first, again = bench.unseen_texts(3, seed), bench.unseen_texts(3, seed)
    assert first == again and first and all(len(set(texts)) == len(texts) == 3 for texts in first.values())
