"""Hostile configuration (issue 30, points 20-22): every reader refuses in one line naming the file,
exit 2, no traceback, no hang, no memory eaten; and internal errors exit 2 in nader-search as in nadc."""
from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from nader.agents.llm.config import load_config
from nader.agents.llm.errors import LLMConfigError
from nader.agents.llm.prices import price_from_table
from nader.agents.llm.profiles import profile_from_table
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.search.config import merge
from nader.search.config_file import read_toml
from nader.search.tables.derived import FileTable
from nader.search.tables.base import TableError

ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "resnet_basic.nad")


def invoke(*argv: str):
    result = CliRunner().invoke(main, list(argv))
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    return result


def one_line(result) -> str:
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert len(errors) == 1, result.output
    return errors[0]


# -- point 20: the table evaluator ----------------------------------------------------------------
def _hostile_tables(tmp_path) -> dict:
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    files = {"field": ("big.csv", f"arch,valid_acc@12\n{ARCH},{'9' * 140_000}\n", "131,072"),
             "digits": ("num.json", f'{{"{ARCH}": {{"valid_acc@12": {"9" * 5000}}}}}', "5,000 characters"),
             "deep": ("deep.json", "[" * 200_000 + "]" * 200_000, "nested"),
             "nan-constant": ("nan.json", f'{{"{ARCH}": {{"valid_acc@12": NaN}}}}', "finite")}
    out = {}
    for name, (file, text, message) in files.items():
        (tmp_path / file).write_text(text)
        out[name] = (tmp_path / file, message)
    out["loop"] = (loop, "loops")
    out["fifo"] = (fifo, "FIFO")
    out["device"] = ("/dev/zero", "character device")
    out["folder"] = (tmp_path, "directory")
    return out


def test_hostile_table_files_are_refused_naming_the_file(tmp_path):
    for name, (path, message) in _hostile_tables(tmp_path).items():
        with pytest.raises(TableError) as info:
            FileTable(path)
        text = str(info.value)
        assert str(path) in text and message in text and "\n" not in text, (name, text)


@pytest.mark.parametrize("name", ["field", "deep", "loop", "fifo", "device"])
def test_hostile_tables_through_run_exit_2(tmp_path, name):
    path, message = _hostile_tables(tmp_path)[name]
    result = invoke("run", "--space", "nb201", "--evaluator", f"table:{path}", "--dataset", "cifar10",
                    "--trials", "1", "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 2 and message in one_line(result)


@pytest.mark.parametrize("value", ["inf", "-inf", "-50", "150", "nan", "1e999"])
def test_accuracies_out_of_range_are_missing_values(tmp_path, value):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,valid_acc@12,test_acc@12\n{ARCH},{value},50\n")
    table = FileTable(path)
    with pytest.raises(TableError) as info:
        table.evaluate(ARCH, "cifar10", 12)
    assert info.value.kind == "missing-value"
    assert any("1 cells whose value is not a finite accuracy in [0, 100]" in line for line in table.summary("cifar10"))
    path.write_text(f"arch,valid_acc@12,test_acc@12\n{ARCH},50,{value}\n")  # the reported figure: left out
    assert FileTable(path).evaluate(ARCH, "cifar10", 12).test_acc is None
    path.write_text(f"arch,valid_acc@12,test_acc@12\n{ARCH},100,0\n")  # the bounds themselves are accuracies
    record = FileTable(path).evaluate(ARCH, "cifar10", 12)
    assert (record.valid_acc, record.test_acc) == (100.0, 0.0)


# -- point 21: search.toml ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("seeds = [99999999999999999999]\n", "seeds: 99999999999999999999 is above the most allowed"),
    ("seed = 99999999999999999999\n", "seed: 99999999999999999999 is above"),
    ("depths = [0, 1, 1]\n", "depths: 0 is below"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),
    ("[strategy-options]\n" + ".".join(["a"] * 5000) + " = 1\n", "nested more than"),
    ("x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n", "nested more than"),
    ("trials = " + "9" * 5000 + "\n", "4,300 digits"),
    ("time-limit = nan\n", "time-limit: expected a positive duration"),  # the reader refuses it, as --time-limit
    ("llm-max-cost = inf\n", "not a finite number"),
])
def test_hostile_search_toml(tmp_path, text, message):
    path = tmp_path / "search.toml"
    path.write_text(f'from = "{ROOT}"\n' + text)
    with pytest.raises(ConfigError) as info:
        merge(read_toml(path)).check()
    assert message in str(info.value)
    assert str(path) in str(info.value) or "time-limit" in text, str(info.value)
    result = invoke("run", str(path), "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    one_line(result)


def test_special_files_as_search_toml_or_root_neither_hang_nor_read(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for config, message in (("/dev/zero", "character device"), (str(fifo), "FIFO")):
        result = invoke("run", config, "--run-dir", str(tmp_path / "run"))
        assert result.exit_code == 2 and config in one_line(result) and message in one_line(result)
    toml = tmp_path / "search.toml"
    for root, message in (("/dev/zero", "character device"), (str(fifo), "FIFO")):
        toml.write_text(f'from = "{root}"\n')
        result = invoke("run", str(toml), "--run-dir", str(tmp_path / "run"))
        assert result.exit_code == 2 and message in one_line(result)


def test_a_search_toml_that_is_not_utf8(tmp_path):
    path = tmp_path / "search.toml"
    path.write_bytes(b'trials = 2\nstrategy = "\xff"\n')
    result = invoke("run", str(path), "--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 2 and "not UTF-8" in one_line(result) and "line 2" in one_line(result)


# -- point 22: the [llm] configuration, profiles and prices ------------------------------------------
@pytest.mark.parametrize("data, message", [
    (b'[llm]\nmodel = "\xff"\n', "not UTF-8"),
    (b"[llm]\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested more than"),
    (b"[llm]\nmax_tokens = " + b"9" * 5000 + b"\n", "4,300 digits"),
    (b"[llm\n", "invalid TOML"),
])
def test_hostile_llm_config(tmp_path, data, message):
    path = tmp_path / "llm.toml"
    path.write_bytes(data)
    with pytest.raises(LLMConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and message in str(info.value)
    result = invoke("llm", "check", "--llm-config", str(path))
    assert result.exit_code == 2 and message in result.output


def test_llm_config_special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, message in ((fifo, "FIFO"), ("/dev/zero", "character device")):
        with pytest.raises(LLMConfigError, match=message):
            load_config(path)


@pytest.mark.parametrize("table", [{"context": 10**30}, {"max_tokens": -1}, {"json": ["x"]}, {"temperature": 1}])
def test_hostile_profiles(table):
    with pytest.raises(LLMConfigError):
        profile_from_table("m*", table)


@pytest.mark.parametrize("table", [{"input": float("inf")}, {"input": float("nan")}, {"input": -1.0},
                                   {"input": 1.0, "output": float("inf")}])
def test_hostile_prices(table):
    with pytest.raises(LLMConfigError, match="prices must be numbers >= 0"):
        price_from_table("m*", table)


# -- internal errors exit 2, as in nadc and the README -----------------------------------------------
def test_an_internal_error_in_run_exits_2(tmp_path, monkeypatch):
    from nader.search import session

    def broken(*args, **kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(session, "run_search", broken)
    result = CliRunner().invoke(main, ["run", "--from", ROOT, "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2 and "internal error: RuntimeError: planted" in result.output
    assert "Traceback" not in result.output


def test_an_internal_error_in_any_command_exits_2(tmp_path, monkeypatch):
    from nader.search.report import cli as report_cli

    def broken(*args, **kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(report_cli, "_read", broken)
    result = CliRunner().invoke(main, ["status", str(tmp_path)])
    assert result.exit_code == 2 and "internal error: RuntimeError: planted" in result.output
    assert "Traceback" not in result.output


def test_eval_refuses_special_files_unread(tmp_path):
    fifo = tmp_path / "arch.nad"
    os.mkfifo(fifo)
    for path, message in (("/dev/zero", "character device"), (str(fifo), "FIFO")):
        result = invoke("eval", path, "--run-dir", str(tmp_path / "run"))
        assert result.exit_code == 2 and message in one_line(result) and path in one_line(result)


def test_an_idea_pool_is_bounded_too(tmp_path):
    from nader.agents.knowledge.pool import PoolFormatError, read_pool

    deep = tmp_path / "pool.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    for path, message in ((deep, "nested"), ("/dev/zero", "character device")):
        with pytest.raises(PoolFormatError, match=message):
            read_pool(path)
