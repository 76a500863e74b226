"""A write the file system refuses part way leaves the file byte for byte (issue 41, finding 1): `nadc fix
--unsafe` and `nadc fmt --write` run as processes under a file-size limit (RLIMIT_FSIZE: any write past
1 KiB fails with EFBIG, as one past a full disk's last block fails with ENOSPC), which needs no root,
unlike test_writes.py's tmpfs. `best -o` has the same test in tests/search/test_best_export.py.

An in-place write truncated the 4 KiB file to its first 1 KiB; the commands exit 1 with one error line
naming the file and saying it is unchanged, claim no change, and leave no temporary file."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

# A block whose unsafe fix (merge the BN's two inputs with an Add) makes the text longer; fmt rewrites MESSY.
BN_TWO_INPUTS = ("##MobileNetBlock##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3,stride=1,groups=C)\n"
                 "3:Conv2d(out_channels=C,kernel_size=5,stride=1,groups=C)\n4:BN\n0->2\n0->3\n2->4\n3->4\n4->1\n")
MESSY = "###A###\n0 : input   #in\n1:output  #out\n2:BN()  #bn\n0->2  #x\n2->1  #y\n"
LIMIT = 1024  # bytes a process may write to one file


def run_limited(argv: list, cwd: Path, program: str = "nader.compiler.cli",
                limit: int = LIMIT) -> subprocess.CompletedProcess:
    """`python -c 'from PROGRAM import main; main()' ARGV` whose writes past `limit` bytes of a file fail
    (EFBIG; Python ignores SIGXFSZ, so the write returns the error instead of killing the process)."""
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", f"from {program} import main; main()", *map(str, argv)],
                          cwd=cwd, capture_output=True, text=True, preexec_fn=set_limit, env=env, timeout=300)


def error_lines(stderr: str) -> list:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _padded(text: str, size: int) -> str:
    """`text` with comment lines in front, `size` bytes in all: the fixed text then needs more."""
    pad = size - len(text)
    lines = []
    while pad > 0:
        line = "#" + "x" * min(78, pad - 2) + "\n"
        lines.append(line)
        pad -= len(line)
    return "".join(lines) + text


@pytest.mark.parametrize("argv, text", [(["fix", "--unsafe"], BN_TWO_INPUTS), (["fmt", "--write"], MESSY)],
                         ids=["fix", "fmt"])
def test_a_write_refused_part_way_leaves_the_file_byte_for_byte(tmp_path, argv, text):
    path = tmp_path / "big.nad"
    original = _padded(text, 4000).encode()  # well past LIMIT
    path.write_bytes(original)
    run = run_limited([*argv, path.name], tmp_path)
    assert path.read_bytes() == original, "the file changed when its write failed"
    assert os.listdir(tmp_path) == ["big.nad"]  # no temporary file left beside it
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    (line,) = error_lines(run.stderr)
    assert line == "error: cannot write the block file big.nad: File too large; it is unchanged", run.stderr
    assert "Applied 1 fix" not in run.stderr and "1 file reformatted" not in run.stdout, (run.stdout, run.stderr)


def test_a_read_only_file_is_left_as_it_was_and_no_fix_is_claimed(tmp_path, monkeypatch):
    """The finding's other half: on a read-only file `fix` said "Permission denied" and "Applied 1 fix"."""
    from conftest import run_nadc

    path = tmp_path / "block.nad"
    path.write_text(BN_TWO_INPUTS)
    path.chmod(0o444)
    real = os.access

    def access(name, mode, *args, **kwargs):  # root may write any file: answer for this one as for a user
        if mode & os.W_OK and os.path.realpath(name) == os.path.realpath(path):
            return False
        return real(name, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    run = run_nadc(["fix", "--unsafe", str(path)])
    assert path.read_text() == BN_TWO_INPUTS
    assert run.code == 1 and "Applied 1 fix" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    (line,) = error_lines(run.stderr)
    assert "read-only" in line and line.endswith("it is unchanged"), line
