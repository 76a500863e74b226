"""Writes that cannot lose a file (issue 41, finding 1): every file the tools write goes through
`nader.inputs.write_file`: a temporary file beside the target, fsync'ed and renamed over it. A full disk
or a read-only file leaves the old file byte for byte, and the command says so without claiming the
change; a command's outputs are claimed first (`claim_outputs`, `nader.runtime.outputs.claim`)."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import run_nadc
from test_full_disk import BN_TWO_INPUTS, MESSY, _padded
from nader.inputs import writes
from nader.inputs.writes import WriteRefused, claim_outputs, write_file
from nader.runtime.outputs import CHECKPOINTS, OWN_FILES, claim, run_file


def _no_space(fd, data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("argv, text", [(["fix", "--unsafe"], BN_TWO_INPUTS), (["fmt", "--write"], MESSY)],
                         ids=["fix", "fmt"])
def test_a_failed_write_leaves_the_file_and_claims_nothing(tmp_path, monkeypatch, argv, text):
    """In process, the disk full at the write: the file is byte for byte as it was, nothing is claimed."""
    path = tmp_path / "block.nad"
    path.write_text(text)
    monkeypatch.setattr(writes, "_write_all", _no_space)
    run = run_nadc([*argv, str(path)])
    assert path.read_text() == text and os.listdir(tmp_path) == ["block.nad"]  # no temporary file left
    assert run.code == 1 and "No space left on device" in run.stderr and "unchanged" in run.stderr, run.stderr
    assert "Applied 1 fix" not in run.stderr and "1 file reformatted" not in run.stdout, run
    assert "could not be written" in run.stderr, run.stderr


def test_fix_json_says_the_file_was_not_written(tmp_path, monkeypatch):
    path = tmp_path / "block.nad"
    path.write_text(BN_TWO_INPUTS)
    monkeypatch.setattr(writes, "_write_all", _no_space)
    run = run_nadc(["fix", "--unsafe", "--format", "json", str(path)])
    (record,) = json.loads(run.stdout)
    assert run.code == 1 and not record["changed"] and record["applied"] == [] and "error" in record
    assert [d["code"] for d in record["remaining"]] == ["NAD207"]  # the file's own error: it is unchanged


@contextlib.contextmanager
def _tiny_filesystem(folder: Path, size: str = "64k"):
    """A 64 KiB (`size`) tmpfs at `folder` (root, where mounting is permitted); None elsewhere."""
    folder.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                                                   capture_output=True).returncode == 0
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], capture_output=True)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"\0" * 4096)


@pytest.mark.parametrize("argv, text", [(["fix", "--unsafe"], BN_TWO_INPUTS), (["fmt", "--write"], MESSY)],
                         ids=["fix", "fmt"])
def test_a_full_disk_leaves_the_file_byte_for_byte(tmp_path, argv, text):
    """On a real full filesystem (a tiny tmpfs; the in-process test above covers machines that cannot mount
    one): the file needs one page more once fixed, which an in-place write truncated it for."""
    with _tiny_filesystem(tmp_path / "disk") as disk:
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (needs root); the in-process ENOSPC test covers the path")
        path = disk / "big.nad"
        original = _padded(text, 4090).encode()
        path.write_bytes(original)
        _fill(disk)
        run = run_nadc([*argv, str(path)])
        assert path.read_bytes() == original, "the file changed on a full disk"
        assert run.code == 1 and "No space left on device" in run.stderr, run.stderr
        assert "Applied 1 fix" not in run.stderr and "1 file reformatted" not in run.stdout, run
        assert sorted(os.listdir(disk)) == ["big.nad", "filler"]
        (disk / "filler").unlink()
        again = run_nadc([*argv, str(path)])  # with room, the same command writes it
        assert again.code == 0 and path.read_bytes() != original, again.stderr


# -- the helper ----------------------------------------------------------------------------------------

def test_a_rewrite_keeps_the_mode_and_follows_a_symbolic_link(tmp_path):
    target = tmp_path / "real.nad"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.nad"
    link.symlink_to(target)
    assert write_file(link, "new") == target
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    fresh = write_file(tmp_path / "fresh.txt", b"x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_devices_and_descriptors_are_written_as_they_are(tmp_path):
    assert write_file("/dev/null", "anything") == Path("/dev/null")
    read_end, write_end = os.pipe()
    try:
        write_file(f"/dev/fd/{write_end}", "through the pipe")
        assert os.read(read_end, 100) == b"through the pipe"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_refusals_are_one_line_and_touch_nothing(tmp_path, monkeypatch):
    with pytest.raises(WriteRefused, match="is a directory"):
        write_file(tmp_path, "x")
    with pytest.raises(WriteRefused, match="No such file or directory; nothing was written"):
        write_file(tmp_path / "no" / "such" / "dir.txt", "x")
    kept = tmp_path / "kept.txt"
    kept.write_text("kept")
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # root may write any file: act as a user
    with pytest.raises(WriteRefused, match="read-only .*unchanged"):
        write_file(kept, "x")
    assert kept.read_text() == "kept"


def test_two_outputs_on_one_file_are_refused(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    os.link(tmp_path / "a.txt", tmp_path / "hard.txt")
    (tmp_path / "soft.txt").symlink_to(tmp_path / "a.txt")
    assert claim_outputs([tmp_path / "a.txt", tmp_path / "b.txt"]) == [tmp_path / "a.txt", tmp_path / "b.txt"]
    for other in ("a.txt", "hard.txt", "soft.txt", "./a.txt"):
        with pytest.raises(WriteRefused, match="each output needs a path of its own"):
            claim_outputs([tmp_path / "a.txt", tmp_path / other])
    with pytest.raises(WriteRefused, match="twice"):
        claim_outputs([tmp_path / "new.pt", tmp_path / "new.pt"])  # not there yet: by path


def test_a_run_directorys_own_files_are_refused(tmp_path):
    run = tmp_path / "run"
    (run / CHECKPOINTS).mkdir(parents=True)
    (run / "runs.sqlite").write_bytes(b"")
    for name in sorted(OWN_FILES):
        assert run_file(run / name), name
    assert run_file(run / CHECKPOINTS / "abc.pt") and run_file(run / CHECKPOINTS / "abc.py")
    (tmp_path / "alias").symlink_to(run / "runs.sqlite")
    assert run_file(tmp_path / "alias")
    assert run_file(run / "report.html") is None and run_file(tmp_path / "runs.sqlite") is None
    with pytest.raises(WriteRefused, match="own runs.sqlite"):
        claim([tmp_path / "out.csv", run / "runs.sqlite"])


def test_the_checkpoint_folder_is_the_stores(tmp_path):
    from nader.runtime.store import RunStore

    store = RunStore(tmp_path)
    try:
        assert store.checkpoint_path("x").parent.name == CHECKPOINTS
    finally:
        store.close()
