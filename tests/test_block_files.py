"""One reader for block files (issue 41, findings 2 and 3): every `nadc` command reads a byte-order
mark, CRLF and bare-CR line ends alike, refuses a named FIFO or a device at once (it used to hang),
takes `-` and process substitution; `fix` and `fmt --write` keep the file's own line ends and mark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_nadc
from nader.inputs import SourceText, read_source
from nader.inputs.files import FileRefused

ROOT = Path(__file__).resolve().parents[1]
CLEAN = (ROOT / "examples" / "resnet_basic.nad").read_text(encoding="utf-8")
TYPO = "##A##\n0:input\n1:output\n2:ReLu\n3:BN\n0->2\n2->3\n3->1\n"  # one safe fix: ReLu -> ReLU
FORMS = {"lf": (b"", "\n"), "crlf": (b"", "\r\n"), "cr": (b"", "\r"), "bom": (b"\xef\xbb\xbf", "\n"),
         "bom-crlf": (b"\xef\xbb\xbf", "\r\n"), "bom-cr": (b"\xef\xbb\xbf", "\r")}


def spelled(text: str, form: str) -> bytes:
    mark, end = FORMS[form]
    return mark + text.replace("\n", end).encode("utf-8")


@pytest.mark.parametrize("form", list(FORMS))
def test_every_command_reads_a_mark_and_line_ends_alike(tmp_path, form):
    """A clean file in any form is clean for verify, lint, hash, fix and fmt, and hashes as the LF file."""
    (tmp_path / "lf.nad").write_bytes(CLEAN.encode())
    path = tmp_path / f"{form}.nad"
    path.write_bytes(spelled(CLEAN, form))
    for argv in (["verify"], ["lint"], ["fix", "--check"], ["fix", "--unsafe", "--check"], ["fmt", "--check"]):
        run = run_nadc([*argv, str(path)])
        assert run.code == 0, (argv, run.stdout, run.stderr)
        assert "NAD101" not in run.stderr + run.stdout and "NAD112" not in run.stderr + run.stdout, (argv, run.stderr)
    lines = run_nadc(["hash", str(tmp_path / "lf.nad"), str(path)]).stdout.splitlines()
    hashes = [line.split()[0] for line in lines]  # one per block, the LF file's first
    assert len(hashes) == 6 and hashes[:3] == hashes[3:], lines
    assert run_nadc(["fix", str(path)]).code == 0 and path.read_bytes() == spelled(CLEAN, form)
    assert run_nadc(["fmt", "--write", str(path)]).code == 0 and path.read_bytes() == spelled(CLEAN, form)


@pytest.mark.parametrize("form", list(FORMS))
def test_fix_keeps_the_files_line_ends_mark_and_comments(tmp_path, form):
    path = tmp_path / "typo.nad"
    path.write_bytes(spelled("# a comment\n" + TYPO, form))
    run = run_nadc(["fix", str(path)])
    assert run.code == 0 and "Applied 1 fix in 1 file; 0 errors remain." in run.stderr, run.stderr
    assert path.read_bytes() == spelled("# a comment\n" + TYPO.replace("ReLu", "ReLU"), form)


@pytest.mark.parametrize("form", list(FORMS))
def test_fmt_write_keeps_the_files_line_ends_and_mark(tmp_path, form):
    path = tmp_path / "messy.nad"
    path.write_bytes(spelled("###A###\n0 : input\n1:output  # out\n2:BN()\n0->2\n2->1", form))
    run = run_nadc(["fmt", "--write", str(path)])
    assert run.code == 0 and "1 file reformatted" in run.stdout, run.stderr
    assert path.read_bytes() == spelled("##A##\n0:input\n1:output  # out\n2:BN\n0->2\n2->1\n", form)
    assert run_nadc(["fmt", "--check", str(path)]).code == 0


def test_mixed_line_ends_take_the_first_ones_kind_when_written(tmp_path):
    path = tmp_path / "mixed.nad"
    path.write_bytes(TYPO.replace("\n", "\r\n", 2).encode())
    assert run_nadc(["fmt", "--check", str(path)]).code == 1  # not one kind: fmt would change it
    assert run_nadc(["fix", str(path)]).code == 0
    assert path.read_bytes() == TYPO.replace("ReLu", "ReLU").replace("\n", "\r\n").encode()


def test_the_reader_in_the_library():
    assert read_source("-", stdin=_Stream(b"\xef\xbb\xbf##A##\r\n0:input\r")) == SourceText("##A##\n0:input\n", "\r\n", True, True)
    text = SourceText("a\nb\n", "\r", True)
    assert text.encode("x\ny\n") == b"\xef\xbb\xbfx\ry\r"


class _Stream:
    def __init__(self, data: bytes):
        import io

        self.buffer = io.BytesIO(data)


# -- what is not a file ------------------------------------------------------------------------------

def _nadc(argv, cwd, timeout=60, shell=False):
    """`nadc ARGV` as a process: a command that hangs fails the test instead of the suite."""
    code = "import sys; from nader.compiler.cli import main; sys.argv[0] = 'nadc'; main()"
    command = argv if shell else [sys.executable, "-c", code, *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, shell=shell,
                          executable="/bin/bash" if shell else None)


COMMANDS = [["verify"], ["fix"], ["fmt"], ["fmt", "--write"], ["lint"], ["hash"], ["--emit", "ir"],
            ["cost", "--network", "nb201", "--dataset", "cifar10"], ["diff", "a.nad"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a))
def test_a_named_fifo_is_refused_by_every_command_at_once(tmp_path, argv):
    os.mkfifo(tmp_path / "fifo")  # no writer ever comes: a command that opens it blocks for ever
    (tmp_path / "a.nad").write_text(CLEAN)
    args = [*argv, "fifo"] if argv[0] != "diff" else ["diff", "fifo", "a.nad"]
    run = _nadc(args, tmp_path)
    said = run.stdout + run.stderr  # verify and lint print their diagnostics on stdout
    assert run.returncode in (1, 2) and "Traceback" not in said, said
    assert "FIFO (named pipe), not a regular file" in said, said


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_device_is_refused_without_reading_it(tmp_path, device):
    for argv in (["verify", device], ["fix", device], ["fmt", device]):
        run = run_nadc(argv)
        assert run.code == 1 and "a character device, not a regular file" in run.stdout + run.stderr, run


def test_process_substitution_and_standard_input_are_read(tmp_path):
    (tmp_path / "typo.nad").write_text(TYPO)
    verify = _nadc("nadc() { %s -c \"import sys; from nader.compiler.cli import main; main()\" \"$@\"; }; "
                   "nadc verify <(cat typo.nad); echo; nadc fmt <(cat typo.nad); nadc fix --diff <(cat typo.nad)"
                   % sys.executable, tmp_path, shell=True)
    assert "NAD104" in verify.stderr and "/dev/fd/" in verify.stderr, verify.stderr
    assert "##A##\n0:input" in verify.stdout and "+2:ReLU" in verify.stdout, verify.stdout
    fixed = run_nadc(["fix", "--format", "json", "-"], stdin=TYPO.replace("\n", "\r\n"))
    assert json.loads(fixed.stdout)[0]["text"] == TYPO.replace("ReLu", "ReLU").replace("\n", "\r\n")


def test_a_named_fifo_is_refused_by_the_reader_and_an_inherited_pipe_is_read(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileRefused, match="FIFO"):
        read_source(tmp_path / "fifo", "block file")
    read_end, write_end = os.pipe()
    os.write(write_end, b"##A##\r\n")
    os.close(write_end)
    try:
        assert read_source(f"/dev/fd/{read_end}", "block file").text == "##A##\n"
    finally:
        os.close(read_end)
    read_end, write_end = os.pipe()
    try:  # a server reading for a client takes no pipe: /dev/fd/0 would be its own protocol stream
        with pytest.raises(FileRefused, match="FIFO"):
            read_source(f"/dev/fd/{read_end}", "document", pipes=False)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_past_the_size_limit_nothing_more_is_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nadc.limits]\ntext-bytes = 64\n")
    (tmp_path / "big.nad").write_text(CLEAN)
    for argv in (["verify", "big.nad"], ["fix", "big.nad"], ["fmt", "big.nad"]):
        run = run_nadc(argv, cwd=tmp_path)
        assert run.code == 1 and "NAD122" in run.stdout + run.stderr, (argv, run)
    assert (tmp_path / "big.nad").read_text() == CLEAN


def test_a_server_reading_for_a_client_gets_no_pipe_and_one_diagnostic(tmp_path):
    from nader.dsl.block_files import read_block_file

    read_end, write_end = os.pipe()
    try:
        source, refused = read_block_file(f"/dev/fd/{read_end}", pipes=False)
        assert source is None and refused.code.code == "NAD100" and "FIFO" in refused.message
    finally:
        os.close(read_end)
        os.close(write_end)
    (tmp_path / "a.nad").write_bytes(b"##A##\r0:input\r")
    source, refused = read_block_file(tmp_path / "a.nad", pipes=False)
    assert refused is None and source.text == "##A##\n0:input\n" and source.newline == "\r"
