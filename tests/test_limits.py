"""Input limits (nader.dsl.limits): checked at the door, the same codes in nadc and in reply extraction."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_nadc

from nader.dsl.extract import extract_blocks
from nader.dsl.limits import DEFAULT_LIMITS, LIMITS, MOST_DIGITS, InputLimits, limits_markdown
from nader.dsl.parse_codes import LIMIT_CODES
from nader.dsl.parser import parse, parse_line

SMALL = "##B##\n0:input\n2:ReLU\n1:output\n0->2\n2->1\n"


def codes(result) -> list[str]:
    return [d.code.code for d in result.diagnostics]


def huge_block(nodes: int) -> str:
    """A block of `nodes` node lines and no edges (so that it stays under the size limit)."""
    return "##Huge##\n" + "".join(f"{i}:BN\n" for i in range(nodes))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_docs_table_is_the_code_table():
    doc = (REPO_ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- limits:begin -->\n(.*?)<!-- limits:end -->", doc, re.S)
    assert match, "docs/language.md lacks the <!-- limits:begin --> ... <!-- limits:end --> markers"
    assert match.group(1) == limits_markdown(), (
        "docs/language.md's limits table is out of date; regenerate it with "
        "python -c \"from nader.dsl.limits import limits_markdown; print(limits_markdown())\"")
    assert [code for *_, code in LIMITS] == [c.code for c in LIMIT_CODES]


def test_every_limit_code_is_explained():
    for code in LIMIT_CODES:
        run = run_nadc(["explain", code.code])
        assert run.code == 0 and code.name in run.stdout and "tool.nadc.limits" in run.stdout


# -- nodes per block -------------------------------------------------------------------

def test_a_100000_node_block_is_rejected_at_the_limit():
    result = parse(huge_block(100_000))
    assert codes(result) == ["NAD118"]
    assert result.program.blocks == ()
    # Reported at the first node past the limit: the rest of the file was not read.
    assert result.diagnostics[0].span.line == 2 + DEFAULT_LIMITS.nodes_per_block


def test_a_100000_node_block_through_nadc(tmp_path):
    path = write(tmp_path / "huge.nad", huge_block(100_000))
    for argv in (["verify", str(path)], ["hash", str(path)], [str(path), "--emit", "torch"]):
        run = run_nadc(argv)
        assert run.code == 1, argv
        assert "NAD118" in run.stdout + run.stderr and "internal error" not in run.stderr


def test_a_100000_node_reply_is_refused_with_the_same_code():
    reply = "Here is the block:\n```\n" + huge_block(100_000) + "```\n"
    got = extract_blocks(reply)
    assert not got and got.text == ""
    assert [d.code.code for d in got.problems] == ["NAD118"]
    assert got.problems[0].span.line == 3 + 1 + DEFAULT_LIMITS.nodes_per_block
    assert "not read" in got.summary()


def test_the_agents_pass_the_limit_code_on():
    from nader.agents.modifier import check_base_block

    check = check_base_block("```\n" + huge_block(5_000) + "```\n")
    assert not check.ok and check.codes == ["NAD118"] and "NAD118" in check.feedback


def test_raising_the_node_limit_in_pyproject_lets_a_big_block_through(tmp_path):
    nodes = DEFAULT_LIMITS.nodes_per_block + 500
    text = "##Big##\n0:input\n" + "".join(f"{i}:ReLU\n" for i in range(2, nodes)) + "1:output\n"
    text += "".join(f"{i}->{i + 1}\n" for i in range(2, nodes - 1)) + f"0->2\n{nodes - 1}->1\n"
    path = write(tmp_path / "blocks" / "big.nad", text)
    refused = run_nadc(["fmt", "--check", str(path)])
    assert refused.code == 1 and "NAD118" in refused.stderr
    write(tmp_path / "pyproject.toml", "[tool.nadc.limits]\nnodes-per-block = 5000\n")
    from nader.dsl import limits as limits_module
    limits_module._limits_in.cache_clear()  # the folder's configuration was looked up above
    limits_module._limits_of_folder.cache_clear()
    allowed = run_nadc(["fmt", "--check", str(path)])
    assert "NAD118" not in allowed.stderr and allowed.code in (0, 1), allowed.stderr
    assert parse(text, limits=InputLimits(nodes_per_block=5000)).program.blocks[0].name == "Big"


# -- inputs per node -------------------------------------------------------------------

@pytest.mark.parametrize("edges", [
    lambda n: "".join(f"{i}->7\n" for i in range(n)),       # one edge line per input
    lambda n: ",".join(str(i) for i in range(n)) + "->7\n",  # one line with every source
], ids=["lines", "sources"])
def test_too_many_inputs(edges):
    n = DEFAULT_LIMITS.inputs_per_node + 1
    text = "##Fan##\n" + "".join(f"{i}:ReLU\n" for i in range(n)) + "7:Add\n" + edges(n)
    result = parse(text)
    assert codes(result) == ["NAD119"] and result.program.blocks == ()
    assert [d.code.code for d in extract_blocks(text).problems] == ["NAD119"]
    assert parse(text, limits=InputLimits(inputs_per_node=n)).program.blocks


# -- digits ----------------------------------------------------------------------------

BIG_ID = "9" * 4301
BIG_PARAM = "7" * 5000


@pytest.mark.parametrize("text", [
    f"##B##\n0:input\n{BIG_ID}:ReLU\n1:output\n0->{BIG_ID}\n{BIG_ID}->1\n",
    f"##B##\n0:input\n2:Conv2d(out_channels={BIG_PARAM},kernel_size=3)\n1:output\n0->2\n2->1\n",
], ids=["id", "parameter"])
@pytest.mark.parametrize("argv", [["verify"], ["fmt"], ["hash"], ["cost"], ["lint"], ["--emit", "torch"],
                                  ["--emit", "json"]], ids=lambda a: "-".join(a))
@pytest.mark.parametrize("line_length", [None, 8192], ids=["default", "long-lines"])
def test_huge_numbers_are_a_diagnostic(tmp_path, text, argv, line_length):
    """Past Python's own limit (4,300 digits): a diagnostic, never an internal error. The lines are longer
    than the default line limit (NAD121); with longer lines allowed the number itself is reported."""
    if line_length:
        write(tmp_path / "pyproject.toml", f"[tool.nadc.limits]\nline-length = {line_length}\n")
    path = write(tmp_path / "big.nad", text)
    args = [argv[0], str(path)] if argv[0] != "--emit" else [str(path), *argv]
    run = run_nadc(args)
    assert run.code == 1, run
    assert "internal error" not in run.stderr
    assert ("NAD120" if line_length else "NAD121") in run.stdout + run.stderr


def test_limits_past_what_python_converts_are_refused():
    with pytest.raises(ValueError, match=f"at most {MOST_DIGITS}"):
        InputLimits(digits_per_number=MOST_DIGITS + 1)
    with pytest.raises(ValueError):
        InputLimits(nodes_per_block=0)


def test_parse_line_never_converts_past_python_s_limit():
    parsed = parse_line(f"2:Conv2d(out_channels={BIG_PARAM})")
    assert [p.code.code for p in parsed.problems] == ["NAD120"]
    assert f"at most {MOST_DIGITS}" in parsed.problems[0].help


def test_digit_limit_and_the_interned_lines():
    line = "2:Conv2d(out_channels=" + "1" * 40 + ",kernel_size=1)"
    text = f"##B##\n0:input\n{line}\n1:output\n0->2\n2->1\n"
    assert "NAD120" in codes(parse(text))
    raised = parse(text, limits=InputLimits(digits_per_number=64))
    assert "NAD120" not in codes(raised) and raised.program.blocks
    assert "NAD120" in codes(parse(text)), "a line read under raised limits must not pass the defaults later"
    short = text.replace("1" * 40, "1" * 20)
    assert "NAD120" not in codes(parse(short))  # interned now
    assert "NAD120" in codes(parse(short, limits=InputLimits(digits_per_number=10)))


# -- lines and text ----------------------------------------------------------------------

def test_a_huge_line_is_reported_and_the_others_read():
    text = SMALL.replace("0:input\n", "0:input\n# " + "x" * 100_000 + "\n")
    result = parse(text)
    assert codes(result) == ["NAD121"] and result.diagnostics[0].span.line == 3
    assert len(result.program.blocks[0].nodes) == 3
    got = extract_blocks(text)
    assert [d.code.code for d in got.problems] == ["NAD121"]


def test_text_size(tmp_path):
    big = SMALL + "# padding\n" * (DEFAULT_LIMITS.text_bytes // 10)
    assert codes(parse(big)) == ["NAD122"]
    assert [d.code.code for d in extract_blocks(big).problems] == ["NAD122"]
    # Bytes, not characters: two-byte characters count twice.
    assert codes(parse(SMALL + "# é\n", limits=InputLimits(text_bytes=len(SMALL) + 4))) == ["NAD122"]
    assert codes(parse(SMALL + "# e\n", limits=InputLimits(text_bytes=len(SMALL) + 4))) == []
    path = write(tmp_path / "big.nad", big)
    for argv in (["verify", str(path)], ["verify", "-"]):
        run = run_nadc(argv, stdin=big if argv[1] == "-" else None)
        assert run.code == 1 and "NAD122" in run.stdout + run.stderr


@pytest.mark.parametrize("table, message", [
    ("[tool.nadc.limits]\nnodes = 5\n", "unknown key `nodes`"),
    ("[tool.nadc.limits]\nnodes-per-block = 0\n", "must be a positive integer"),
    ("[tool.nadc.limits]\nline-length = '9000'\n", "must be a positive integer"),
    (f"[tool.nadc.limits]\ndigits-per-number = {MOST_DIGITS + 1}\n", f"at most {MOST_DIGITS}"),
    ("[tool.nadc]\nlimits = 3\n", "must be a table"),
    ("[tool.nadc.limits]\ntext-bytes = 99999999999999999999\n", "may be at most 2,147,483,647"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 32 deep"),  # issue 30, point 2
    ("[tool.nadc.limits]\n" + ".".join(["a"] * 5000) + " = 1\n", "nested more than 32 deep"),
    ("[tool.nadc.limits]\nnodes-per-block = '\udcff'\n", "not UTF-8"),
])
def test_bad_configuration_is_a_usage_error(tmp_path, table, message):
    (tmp_path / "pyproject.toml").write_bytes(table.encode("utf-8", "surrogateescape"))
    path = write(tmp_path / "b.nad", SMALL)
    run = run_nadc(["verify", str(path)])
    assert run.code == 2 and message in run.stderr and "internal error" not in run.stderr
