"""`RUN/bench-nad.jsonl`: each request's result, written as it completes, so a run stopped or
interrupted resumes where it was: the requests done are read back, not asked again.

One JSON object a line: {"setting", "rounds", "result": RequestResult's fields}. A result is
keyed by setting, feedback rounds and request id; a torn last line (a kill mid-write) is skipped.
"""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Dict

from .runner import RequestResult

FILE = "bench-nad.jsonl"
_FIELDS = {f.name for f in fields(RequestResult)}


def load_done(run_dir, setting: str, rounds: int) -> Dict[str, RequestResult]:
    """The results already recorded for this setting and rounds, by request id."""
    path = Path(run_dir) / FILE
    done: Dict[str, RequestResult] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            if row["setting"] != setting or row["rounds"] != rounds or set(row["result"]) != _FIELDS:
                continue
            result = RequestResult(**row["result"])
        except (ValueError, KeyError, TypeError):
            continue
        done[result.request_id] = result
    return done


def append(run_dir, setting: str, rounds: int, result: RequestResult) -> None:
    path = Path(run_dir) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"setting": setting, "rounds": rounds, "result": asdict(result)}, sort_keys=True) + "\n"
    with path.open("a+b") as out:
        if out.tell() > 0:
            out.seek(-1, 2)
            if out.read(1) != b"\n":  # a torn last line: end it so this one reads back
                line = "\n" + line
        out.write(line.encode("utf-8"))
