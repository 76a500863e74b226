"""What no output may replace: a run directory's own files.

`-o RUN/runs.sqlite` would overwrite the search's database, `-o RUN/checkpoints/JOB.pt` a training
checkpoint a resume reads. A command that writes files claims them first (`claim`), which refuses
such a path, and two outputs that are one file, before anything is written; then it writes each
with `nader.inputs.writes.write_file`. A run directory is a folder holding the store's database.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional, Union

from nader.inputs.writes import claim_outputs

from .integrity import RECOVERED_NAME
from .lock import LOCK_NAME
from .store import DB_NAME

#: the folder of a run's checkpoints (`RunStore.checkpoint_path`; tests/test_writes.py keeps them in step)
CHECKPOINTS = "checkpoints"
#: a run directory's own files: the database and SQLite's files beside it, the recovered copy, the lock
OWN_FILES = frozenset(name + suffix for name in (DB_NAME, RECOVERED_NAME) for suffix in ("", "-wal", "-shm", "-journal")
                      ) | {LOCK_NAME}


def _is_run_dir(folder: Path) -> bool:
    return os.path.isfile(folder / DB_NAME)


def run_file(path: Union[str, Path]) -> Optional[str]:
    """Why `path` (a symbolic link followed) is a run directory's own file, or None."""
    target = Path(os.path.realpath(path))
    if target.name in OWN_FILES and _is_run_dir(target.parent):
        return f"it is the run directory {target.parent}'s own {target.name}; write the output elsewhere"
    for folder in target.parents:
        if folder.name == CHECKPOINTS and _is_run_dir(folder.parent):
            return (f"it is inside the run directory {folder.parent}'s {CHECKPOINTS}/, which a resume reads; "
                    f"write the output elsewhere")
    return None


def claim(paths: Iterable[Union[str, Path]]) -> list[Path]:
    """`paths`, the outputs of one command, once none is a run directory's own file and no two are one
    file; `nader.inputs.writes.WriteRefused` (one line) otherwise. Call it before writing any of them."""
    return claim_outputs(paths, refuse=run_file)
