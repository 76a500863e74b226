"""nadc's exit statuses at the edges: an internal error exits 2 (as the README says, and as
nader-search does: tests/search/test_hostile_config.py), and flags refuse nan and infinities."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_nadc

CLEAN = "##A##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n"


def test_an_internal_error_exits_2_as_the_readme_says(tmp_path):
    """nadc's last line of defence: one line, exit 2, no traceback (nader-search's twin is in
    tests/search/test_hostile_config.py)."""
    from unittest import mock

    (tmp_path / "a.nad").write_text(CLEAN, encoding="utf-8")
    with mock.patch("nader.compiler.commands.compile.load", side_effect=RuntimeError("planted")):
        result = run_nadc(["a.nad"], cwd=tmp_path)
    assert result.code == 2 and "internal error: RuntimeError: planted" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "1e999"])
def test_budget_flags_refuse_nan_infinities_and_non_positive_values(value):
    """click's FloatRange lets nan and inf through; `nadc cost --max-params nan` was an internal error."""
    example = str(Path(__file__).resolve().parent.parent / "examples" / "resnet_basic.nad")
    for flag in ("--max-params", "--max-flops", "--max-memory"):
        result = run_nadc(["cost", example, flag, value])
        assert result.code == 2 and f"Invalid value for '{flag}'" in result.stderr, result.stderr
        assert "internal error" not in result.stderr
