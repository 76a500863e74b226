"""`nadc` as a process: a front end that does not import torch, and a program exit that loses
nothing (the user-facing statuses and formats are in test_cli.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO_ROOT
from nader import __version__
from test_cli import CLEAN


# -- start-up: the front end does not import torch ------------------------------------

PROBE = textwrap.dedent("""
    import sys
    from nader.compiler.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
    heavy = sorted(m for m in ("torch", "onnx", "onnxruntime", "pygls", "lsprotocol") if m in sys.modules)
    sys.__stderr__.write("HEAVY-MODULES:" + ",".join(heavy) + "\\n")
""")


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["{file}", "--emit", "ir"],
    ["{file}", "--emit", "json", "--format", "json"],
    ["explain", "NAD104"],
    ["verify", "{file}"],
    ["lint", "{file}"],
])
def test_front_end_does_not_import_torch(tmp_path, argv):
    block = tmp_path / "x.nad"
    block.write_text(CLEAN, encoding="utf-8")
    args = [a.replace("{file}", str(block)) for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120)
    marker = [line for line in done.stderr.splitlines() if line.startswith("HEAVY-MODULES:")]
    assert marker, done.stderr
    assert marker[-1] == "HEAVY-MODULES:", f"`nadc {' '.join(argv)}` imported {marker[-1].split(':')[1]}"
    if argv == ["--version"]:
        assert __version__ in done.stdout


# -- the program's exit: no teardown, nothing lost ---------------------------------------

AS_PROGRAM = textwrap.dedent("""
    import atexit, sys
    from nader.compiler.cli import main
    atexit.register(lambda: sys.stderr.write("EXIT-HANDLER-RAN\\n"))
    sys.argv = ["nadc", *sys.argv[1:]]
    main()
""")


def test_the_program_exits_at_once_with_all_output_and_its_exit_handlers(tmp_path):
    # More output than a pipe holds: it must arrive whole, though the process skips its teardown.
    paths = []
    for k in range(250):
        path = tmp_path / f"b{k}.nad"
        path.write_text(CLEAN if k != 7 else "##Bad##\n0:input\n1:output\n2:Conv2d(\n", encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run([sys.executable, "-c", AS_PROGRAM, "verify", "--format", "json", "--shapes", *paths],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert len(done.stdout) > 1 << 16
    objects = json.loads(done.stdout)
    assert [o["file"] for o in objects] == paths
    assert [o["ok"] for o in objects].count(False) == 1
    assert done.returncode == 1
    assert "EXIT-HANDLER-RAN" in done.stderr
    ok = subprocess.run([sys.executable, "-c", AS_PROGRAM, "hash", paths[0]], capture_output=True, text=True,
                        cwd=REPO_ROOT, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip() and "EXIT-HANDLER-RAN" in ok.stderr



def test_the_fast_exit_flushes_what_was_written_but_not_flushed():
    script = ("import sys\nfrom nader.compiler.cli import _exit_now\n"
              "sys.stdout.buffer.write(b'bytes to stdout'); sys.stderr.write('to stderr')\n"
              "_exit_now(3)\n")
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                          env=buffered, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "bytes to stdout", "to stderr")


def test_the_nadc_program_loads_a_command_with_the_collector_off_and_then_on_again():
    """`nadc` (the program, `main()` without argv) imports a command with the cyclic collector off
    and freezes what the import made (start-up: compiler/cli.py `_loading`); the collector is on
    for the command. Called in process (tests, `main(argv)`), the caller's collector is left alone."""
    code = ("import gc; from nader.compiler import cli; cli.cli.get_command(None, 'hash'); "
            "print(gc.isenabled(), gc.get_freeze_count()); cli._loading.active = True; "
            "cli.cli.get_command(None, 'fmt'); print(gc.isenabled(), gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "0", "True", "True"]
