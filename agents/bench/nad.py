"""The NAD benchmark's data: base blocks and modification requests with machine checks.

`load_requests()` returns the requests in file order; each carries its base block's text, the checks a
reply must pass (`agents/bench/checks.py`) and one reference answer. `score(request, text)`
judges a reply's block text: it must parse, verify as a base block, differ from the base block
and pass every check.

The base blocks (`nad/*.nad`) are the benchmark's own, frozen: each request's prompt holds its
block's text, which a recorded run replays (`--replay`). `resnet_basic.nad` is the graph of the
shipped example's base block (examples/resnet_basic.nad, the one source the compiler's worked
examples read), kept as its own copy so that editing the example never changes the benchmark.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Optional

from nader.compiler.passes.diff import block_diff
from nader.compiler.passes.verify import verify_block
from nader.dsl.ir import Role
from nader.dsl.parser import parse

from .checks import Outcome, judge

DATA = "nad"
LEVELS = ("micro", "macro")
#: The settings a run compares (`nader-search bench-nad --setting`): the Modifier with or without
#: the compiler's feedback and the Reflector's lessons. Here, not in runner.py, so that the
#: command's options (read by `nader-search --help`) do not load the agents.
SETTINGS = {
    "full": {"feedback": True, "experience": True},
    "no-feedback": {"feedback": False, "experience": True},
    "no-experience": {"feedback": True, "experience": False},
    "no-feedback-no-experience": {"feedback": False, "experience": False},
}


@dataclass(frozen=True)
class Request:
    id: str  # "<base>/<level>/<nn>"
    base: str  # base block's file stem
    level: str  # micro | macro
    text: str  # the modification request, as an LLM sees it
    base_text: str
    checks: tuple = ()
    reference: dict = field(default_factory=dict, compare=False)

    def reference_text(self) -> str:
        return apply_patch(self.base_text, self.reference)


def _data_file(name: str) -> str:
    return resources.files("nader.agents.bench").joinpath(DATA, name).read_text(encoding="utf-8")


def base_blocks() -> dict[str, str]:
    folder = resources.files("nader.agents.bench").joinpath(DATA)
    return {p.name[:-4]: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".nad")}


def load_requests() -> list[Request]:
    spec = tomllib.loads(_data_file("requests.toml"))
    bases = base_blocks()
    out = []
    for item in spec["request"]:
        base, level, _ = item["id"].split("/")
        if level not in LEVELS or base not in bases:
            raise ValueError(f"request {item['id']}: unknown base block or level")
        out.append(Request(id=item["id"], base=base, level=level, text=item["text"], base_text=bases[base],
                           checks=tuple(item["checks"]), reference=item.get("reference", {})))
    return out


def apply_patch(base_text: str, patch: dict) -> str:
    """A reference answer: `set` rewrites node lines by id, `drop` removes node lines (by id) and
    edge lines (as written), `add` appends lines."""
    sets = {str(k): v for k, v in patch.get("set", {}).items()}
    drops = set(patch.get("drop", ()))
    lines = []
    for line in base_text.splitlines():
        code = line.split("#", 1)[0].strip() if not line.startswith("##") else line.strip()
        ident = code.split(":", 1)[0] if ":" in code and "->" not in code else None
        if code in drops or (ident is not None and ident in drops):
            continue
        if ident is not None and ident in sets:
            line = f"{ident}:{sets[ident]}"
        lines.append(line)
    lines.extend(patch.get("add", ()))
    return "\n".join(lines) + "\n"


def score(request: Request, text: str) -> tuple[bool, Outcome]:
    """(verifies, outcome): whether the reply's base block verifies, and whether it does what was asked."""
    parsed = parse(text)
    blocks = parsed.program.blocks
    if not blocks:
        return False, Outcome(False, "no block in the reply")
    block = blocks[0]
    report = verify_block(block, role=Role.BASE)
    if not report.ok:
        codes = sorted({d.code.code for d in report.diagnostics if d.is_error})
        return False, Outcome(False, "does not verify: " + ", ".join(codes))
    base = parse(request.base_text).program.blocks[0]
    return True, judge(list(request.checks), block_diff(base, block))


def request_by_id(requests: list[Request], ident: str) -> Optional[Request]:
    return next((r for r in requests if r.id == ident), None)
