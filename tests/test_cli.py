"""`nadc` as a user sees it: exit statuses, output formats, explain, version,
and robustness on arbitrary input (the process itself: test_cli_process.py).

Exit statuses: 0 clean or warnings only, 1 errors found (an unreadable or
missing file is NAD100, so 1), 2 usage errors (unknown option, bad option
value, unknown code for `explain`) and internal errors.

`nadc FILE` (compile) keeps stdout for its artifact (IR, JSON, PyTorch, ...),
so its diagnostics go to stderr in every format; with `--format json` stderr
is exactly one JSON array of diagnostic objects.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_nadc, shared_dir
from nader import __version__
from nader.compiler.codes import code_table
from nader.dsl.ops import REGISTRY, reference_text

FORMATS = ("full", "concise", "json")
JSON_FIELDS = {"file", "block", "line", "col", "end_line", "end_col", "code", "severity", "message", "help"}

CLEAN = """\
##ResNetBasicBlock##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:ReLU
5:Add
0->2
2->3
3->4
0,4->5
5->1
"""
WARNING_ONLY = CLEAN.replace("##ResNetBasicBlock##", "###ResNetBasicBlock###")  # NAD116
ERRORS = CLEAN.replace("4:ReLU", "4:Relu").replace("0->2", "0-2")  # NAD104, NAD102


@pytest.fixture
def files(tmp_path):
    for name, text in {"clean.nad": CLEAN, "warn.nad": WARNING_ONLY, "bad.nad": ERRORS}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def diagnostics_of(result, fmt):
    """The diagnostics text of a compile run (always stderr)."""
    return result.stderr


# -- exit statuses --------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name, status, codes", [
    ("clean.nad", 0, set()),
    ("warn.nad", 0, {"NAD116"}),
    ("bad.nad", 1, {"NAD104", "NAD102"}),
    ("missing.nad", 1, {"NAD100"}),
])
def test_exit_status_and_codes(files, fmt, name, status, codes):
    result = run_nadc([name, "--format", fmt], cwd=files)
    assert result.code == status, result.stderr
    text = diagnostics_of(result, fmt)
    for code in codes:
        assert code in text
    if not codes:
        assert "NAD" not in text
    if fmt == "json":
        assert {d["code"] for d in json.loads(result.stderr)} == codes


@pytest.mark.parametrize("fmt", FORMATS)
def test_several_files_worst_status_wins(files, fmt):
    result = run_nadc(["clean.nad", "warn.nad", "bad.nad", "--format", fmt], cwd=files)
    assert result.code == 1
    if fmt == "json":
        assert {d["file"] for d in json.loads(result.stderr)} == {"warn.nad", "bad.nad"}
    assert run_nadc(["clean.nad", "warn.nad", "--format", fmt], cwd=files).code == 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("argv", [
    ["clean.nad", "--bogus"],                 # unknown option of the default command
    ["compile", "clean.nad", "--no-such"],    # unknown option of a named command
    ["clean.nad", "--emit", "wat"],           # bad choice
    ["compile"],                              # missing FILES
    ["explain", "NAD999"],                    # unknown code
    ["explain", "NAD104", "--bogus"],
])
def test_usage_errors_exit_2(files, fmt, argv):
    result = run_nadc([*argv, "--format", fmt] if argv[0] != "explain" else argv, cwd=files)
    assert result.code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.strip(), "a usage error says what is wrong"


def test_bad_format_value_exits_2(files):
    result = run_nadc(["clean.nad", "--format", "xml"], cwd=files)
    assert result.code == 2
    assert "xml" in result.stderr


def test_unknown_subcommand_is_a_missing_file(files):
    """`nadc FILE` is `nadc compile FILE`, so an unknown word is a file that does not exist."""
    result = run_nadc(["frobnicate", "--format", "concise"], cwd=files)
    assert result.code == 1
    assert "NAD100" in result.stderr and "frobnicate" in result.stderr


def test_directory_is_unreadable_file(files):
    result = run_nadc([".", "--format", "concise"], cwd=files)
    assert result.code == 1 and "NAD100" in result.stderr


def test_non_utf8_file_is_nad100(tmp_path):
    (tmp_path / "latin1.nad").write_bytes("##A##\n# café\n0:input\n".encode("latin-1"))
    result = run_nadc(["latin1.nad", "--format", "json"], cwd=tmp_path)
    assert result.code == 1
    assert [d["code"] for d in json.loads(result.stderr)] == ["NAD100"]


def test_byte_order_mark_is_not_content(tmp_path):
    (tmp_path / "bom.nad").write_bytes(b"\xef\xbb\xbf" + CLEAN.encode())
    result = run_nadc(["bom.nad", "--format", "json"], cwd=tmp_path)
    assert (result.code, json.loads(result.stderr)) == (0, [])


def test_stdin_dash(files):
    result = run_nadc(["-", "--format", "concise"], cwd=files, stdin=ERRORS)
    assert result.code == 1
    assert result.stderr.startswith("<stdin>:")


# -- formats --------------------------------------------------------------------

def test_json_diagnostics_fields(files):
    result = run_nadc(["bad.nad", "--format", "json"], cwd=files)
    data = json.loads(result.stderr)
    assert isinstance(data, list) and len(data) == 2
    for d in data:
        assert JSON_FIELDS <= set(d), JSON_FIELDS - set(d)
        assert d["file"] == "bad.nad" and d["block"] == "ResNetBasicBlock"
        assert d["severity"] in ("error", "warning")
        assert all(isinstance(d[k], int) and d[k] >= 1 for k in ("line", "col", "end_line", "end_col"))
        assert (d["end_line"], d["end_col"]) > (d["line"], d["col"])
        assert isinstance(d["message"], str) and d["message"]
        assert d["help"] is None or isinstance(d["help"], str)
    by_code = {d["code"]: d for d in data}
    assert (by_code["NAD104"]["line"], by_code["NAD104"]["col"], by_code["NAD104"]["end_col"]) == (6, 3, 7)
    assert "`ReLU`" in by_code["NAD104"]["help"]  # the suggestion
    assert by_code["NAD102"]["line"] == 8
    assert result.stdout == ""  # nothing is emitted when there are errors


@pytest.mark.parametrize("emit", ["ir", "json"])
@pytest.mark.parametrize("name", ["clean.nad", "warn.nad", "bad.nad", "missing.nad"])
def test_json_diagnostics_are_exactly_one_document(files, name, emit):
    """With --format json, stderr parses as one JSON array, whatever stdout carries."""
    result = run_nadc([name, "--emit", emit, "--format", "json"], cwd=files)
    assert isinstance(json.loads(result.stderr), list)
    if result.code == 0 and emit == "json":
        assert isinstance(json.loads(result.stdout), list)


def test_concise_format(files):
    result = run_nadc(["bad.nad", "--format", "concise"], cwd=files)
    lines = result.stderr.splitlines()
    assert lines == [
        "bad.nad:6:3: error[NAD104] unknown operation `Relu`",
        "bad.nad:8:1: error[NAD102] edge written with `-` instead of `->`",
    ]


def test_full_format_shows_source_and_caret(files):
    result = run_nadc(["bad.nad"], cwd=files)
    assert result.code == 1
    err = result.stderr
    assert "error[NAD104]: unknown operation `Relu`" in err
    assert "--> bad.nad:6:3 (block ResNetBasicBlock)" in err
    assert "6 | 4:Relu\n  |   ^^^^\n" in err
    assert "= help:" in err


def test_emit_ir_and_json(files):
    ir = run_nadc(["clean.nad", "--emit", "ir"], cwd=files)
    assert ir.code == 0 and ir.stdout.startswith("block ResNetBasicBlock (role=base):")
    assert "%2 = Conv2d[out_channels=C, kernel_size=3, stride=1, dilation=1, groups=1, bias=1](%0)" in ir.stdout
    emitted = run_nadc(["warn.nad", "--emit", "json", "--format", "json"], cwd=files)
    program = json.loads(emitted.stdout)
    assert program[0]["file"] == "warn.nad" and program[0]["blocks"][0]["name"] == "ResNetBasicBlock"
    assert [d["code"] for d in json.loads(emitted.stderr)] == ["NAD116"] and emitted.code == 0
    failed = run_nadc(["bad.nad", "--emit", "json"], cwd=files)
    assert failed.code == 1 and failed.stdout == "" and "NAD104" in failed.stderr


def test_quiet_when_clean(files):
    for fmt in ("full", "concise"):
        assert run_nadc(["clean.nad", "--format", fmt], cwd=files).stderr == ""


# -- explain, version -------------------------------------------------------------

def test_explain_code_prints_its_doc():
    result = run_nadc(["explain", "NAD104"])
    assert result.code == 0
    doc, fixes = result.stdout.split("\n## Fixes (`nadc fix`)\n")  # then the fix kinds answering it
    assert doc == code_table()["NAD104"].explain()
    assert "`torch-operation-name` (safe)" in fixes
    assert result.stdout.startswith("# NAD104 (unknown-operation)")
    assert "## What it does" in result.stdout


@pytest.mark.parametrize("spelling", ["nad104", "unknown-operation", " NAD104 "])
def test_explain_other_spellings(spelling):
    result = run_nadc(["explain", spelling])
    assert result.code == 0 and result.stdout.startswith("# NAD104")


def test_explain_ops_prints_the_reference():
    result = run_nadc(["explain", "ops"])
    assert result.code == 0
    assert result.stdout == reference_text() + "\n"
    for d in REGISTRY.values():
        assert f"- {d.signature()} [" in result.stdout


def test_explain_lists_all_codes():
    result = run_nadc(["explain"])
    assert result.code == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    assert listed == list(code_table())


def test_every_code_has_a_doc():
    for code, entry in code_table().items():
        result = run_nadc(["explain", code])
        assert result.code == 0 and f"# {code} ({entry.name})" in result.stdout
        assert "## What it does" in entry.doc, f"{code} documents what it does"


def test_version():
    result = run_nadc(["--version"])
    assert result.code == 0
    assert result.stdout.strip() == f"nadc, version {__version__}"


def test_help():
    result = run_nadc(["--help"])
    assert result.code == 0 and "explain" in result.stdout and "Traceback" not in result.stdout


# -- robustness (hypothesis) --------------------------------------------------------

SEEDS = [
    CLEAN,
    ERRORS,
    "##Cell##\n0:input1\n1:input2\n2:output\n3:concat(dim=1)\n4:Conv2d(out_channels=dim,kernel_size=(1,3))\n"
    "0,1->3\n3->4\n4->2\n",
    "##Mix_stem##  # comment\n0:input\n1:output\n2:permute(0,2,3,1)\n3:LN\n4:reshape(B,-1,H*W//2)\n"
    "5:DropPath(prob=0.2)\n0->2\n2->3\n3->4\n4->5\n5->1\n# trailing\n",
    "```\n##A##\n0:input\n1:output\n0->1\n```\n",
]


def _corpus_seeds(limit: int = 40) -> list[str]:
    shared = shared_dir()
    if shared is None:
        return []
    files = sorted((shared / "nader-compat" / "blocks").glob("*.txt"))
    return [p.read_text(encoding="utf-8") for p in files[:limit]]


ALL_SEEDS = SEEDS + _corpus_seeds()
ALPHABET = "0123456789:,->#()=*/+ \t\r\n.ABCHWdimxyz_`\x0b\xa0é"

mutation = st.one_of(
    st.tuples(st.just("replace"), st.integers(0, 10_000), st.sampled_from(ALPHABET)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.sampled_from(ALPHABET)),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.just("")),
    st.tuples(st.just("byte"), st.integers(0, 10_000), st.integers(0, 255)),
    st.tuples(st.just("drop-line"), st.integers(0, 10_000), st.just("")),
    st.tuples(st.just("dup-line"), st.integers(0, 10_000), st.just("")),
    st.tuples(st.just("swap-lines"), st.integers(0, 10_000), st.integers(0, 10_000)),
)


def mutate(text: str, edits) -> bytes:
    data = text.encode("utf-8")
    for kind, at, arg in edits:
        if kind in ("drop-line", "dup-line", "swap-lines"):
            lines = data.split(b"\n")
            i = at % len(lines)
            if kind == "drop-line":
                del lines[i]
            elif kind == "dup-line":
                lines.insert(i, lines[i])
            else:
                j = arg % len(lines)
                lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
            continue
        i = at % (len(data) + 1)
        if kind == "replace" and data:
            i = min(i, len(data) - 1)
            data = data[:i] + arg.encode() + data[i + 1:]
        elif kind == "insert":
            data = data[:i] + arg.encode() + data[i:]
        elif kind == "delete" and data:
            i = min(i, len(data) - 1)
            data = data[:i] + data[i + 1:]
        elif kind == "byte" and data:
            i = min(i, len(data) - 1)
            data = data[:i] + bytes([arg]) + data[i + 1:]
    return data


#: Commands the fuzz test drives; authors of further commands may add theirs.
FUZZ_ARGS = [
    ["--format", "full"], ["--format", "concise"], ["--format", "json"],
    ["--emit", "json"], ["--emit", "json", "--format", "json"],
]

_FUZZ_DIR = Path(tempfile.mkdtemp(prefix="nadc-fuzz-"))


def check_never_crashes(data: bytes, extra: list[str]) -> None:
    path = _FUZZ_DIR / "fuzz.nad"
    path.write_bytes(data)
    try:
        result = run_nadc([str(path), *extra])
    except SystemExit as escaped:  # pragma: no cover - run_nadc catches it
        pytest.fail(f"SystemExit escaped: {escaped!r}")
    output = result.stdout + result.stderr
    assert result.code in (0, 1), f"exit {result.code}: {output[-2000:]}"
    assert "Traceback" not in output
    assert "internal error" not in output, output[-2000:]
    if "--format" in extra and extra[extra.index("--format") + 1] == "json":
        parsed = json.loads(result.stderr)
        assert (result.code == 1) == any(d["severity"] == "error" for d in parsed)
    if result.code == 0 and "--emit" in extra and extra[extra.index("--emit") + 1] == "json":
        json.loads(result.stdout)


FUZZ_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ_SETTINGS
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=300), extra=st.sampled_from(FUZZ_ARGS))
def test_fuzz_random_text(text, extra):
    check_never_crashes(text.encode("utf-8", "surrogatepass"), extra)


@FUZZ_SETTINGS
@given(text=st.text(alphabet=ALPHABET, max_size=300), extra=st.sampled_from(FUZZ_ARGS))
def test_fuzz_language_alphabet(text, extra):
    check_never_crashes(text.encode("utf-8"), extra)


@FUZZ_SETTINGS
@given(seed=st.sampled_from(ALL_SEEDS), edits=st.lists(mutation, min_size=1, max_size=8),
       extra=st.sampled_from(FUZZ_ARGS))
def test_fuzz_mutated_blocks(seed, edits, extra):
    check_never_crashes(mutate(seed, edits), extra)


#: Single-file subcommands fuzzed as well, once their module exists (run with their
#: defaults plus each value of their `--format` option). `fmt` runs without `--write`.
FUZZ_SUBCOMMANDS = ("verify", "fmt", "hash", "lint")


def _subcommand(name):
    import importlib.util

    from nader.compiler.cli import COMMANDS

    module = COMMANDS.get(name, (None,))[0]
    if module is None or importlib.util.find_spec(module) is None:
        pytest.skip(f"`nadc {name}` is not implemented yet")
    from nader.compiler.cli import cli
    return cli.get_command(None, name)


@pytest.mark.parametrize("name", FUZZ_SUBCOMMANDS)
def test_fuzz_subcommands(name):
    command = _subcommand(name)
    fmt_option = next((p for p in command.params if "--format" in getattr(p, "opts", ())), None)
    formats = [["--format", f] for f in getattr(fmt_option.type, "choices", FORMATS)] if fmt_option else [[]]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.sampled_from(ALL_SEEDS), edits=st.lists(mutation, max_size=6), extra=st.sampled_from(formats))
    def fuzz(seed, edits, extra):
        path = _FUZZ_DIR / f"{name}.nad"
        path.write_bytes(mutate(seed, edits))
        result = run_nadc([name, str(path), *extra])
        output = result.stdout + result.stderr
        assert result.code in (0, 1), f"exit {result.code}: {output[-2000:]}"
        assert "Traceback" not in output and "internal error" not in output, output[-2000:]
        assert path.read_bytes() == mutate(seed, edits), "the input file was modified"

    fuzz()


def test_fuzz_can_fail():
    """The fuzz oracle is not vacuous: an internal error would be caught."""
    from unittest import mock

    with mock.patch("nader.compiler.commands.compile.load", side_effect=ValueError("boom")):
        with pytest.raises(AssertionError):
            check_never_crashes(CLEAN.encode(), ["--format", "concise"])


def test_deeply_nested_expressions_are_diagnosed(tmp_path):
    for inner in ("-" * 2000 + "1", "1+" * 3000 + "1", "(" * 1500 + "1" + ")" * 1500):
        (tmp_path / "deep.nad").write_text(f"##A##\n0:input\n1:output\n2:Conv2d(out_channels={inner},"
                                           "kernel_size=3)\n0->2\n2->1\n", encoding="utf-8")
        for fmt in FORMATS:
            result = run_nadc(["deep.nad", "--format", fmt], cwd=tmp_path)
            assert result.code in (0, 1) and "internal error" not in result.stderr
