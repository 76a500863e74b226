"""Replay of real LLM output: GPT-4o blocks that failed NADER's checks, with the fixes GPT-4o
then wrote (`shared/nader-compat/fail2success_log.json`).

Each failing block goes through our feedback loop with a scripted "LLM" (the loopback server)
that first answers with the recorded failing block and then with the recorded fix. Counted, and
printed (`pytest -s`):

* failures our diagnostics catch before training (NADER's checker caught every one of these:
  its message is the record's `error`);
* fixes NADER's checker accepted that our verifier rejects (NADER trained these: had they been
  wrong, they would crash at training time; execution decides, see the assertion below);
* failures our loop repairs with the recorded fix in the second round.

Execution is the judge: the test's reference executor (tests/reference_executor.py, which
never consults our shape inference) runs every block that the two checkers disagree on, at the
resolutions of an NB201 network (32, 16, 8) and C = 16 (a stem: the 32x32 image, C = 3).
"""
from __future__ import annotations


import json

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.modifier import Modifier
from nader.compiler.reply_checks import check_architecture, check_base_block
from nader.dsl.ir import Role
from nader.dsl.parser import parse
from reference_executor import runs
from scripted import ScriptedLLM

# Default stem and downsample blocks for base-block records without their own.
STEM = "##{n}_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=3,stride=1)\n3:BN\n0->2\n2->3\n3->1\n"
DOWN = ("##{n}_downsample##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=3,stride=2)\n3:BN\n"
        "0->2\n2->3\n3->1\n")


def _records(compat_dir):
    data = json.loads((compat_dir / "fail2success_log.json").read_text())
    return [(kind, name, i, r) for kind, group in data.items() for name, records in group.items()
            for i, r in enumerate(records)]


def _name(block: str) -> str:
    return block.splitlines()[0].strip("#")


def _arch(blocks: dict, fallback: dict) -> str:
    base = blocks["base_block"]
    n = _name(base)
    stem = blocks.get("stem_block") or fallback.get("stem_block") or STEM.format(n=n)
    down = blocks.get("downsample+block") or fallback.get("downsample+block") or DOWN.format(n=n)
    rename = lambda text, suffix: "\n".join([f"##{n}_{suffix}##", *text.strip().splitlines()[1:]]) + "\n"  # noqa
    return base.strip() + "\n" + rename(stem, "stem") + rename(down, "downsample")


def _executes(text: str, role: Role) -> bool:
    blocks = parse(text).program.blocks
    if not blocks:
        return False
    # As a network builds it: weights per stage resolution, square maps. A stem takes the image
    # (C = 3) at 32x32, at the stride it has (the builder adopts it: 1, 2 or 4); dim = 48 meets the
    # `dim % C == 0` that grouped stems (groups=C) need.
    if role is Role.STEM:
        return any(runs(blocks[0], role, C=3, dim=48, sizes=[32], stem_stride=s)[0] for s in (1, 2, 4))
    dim = 32 if role is Role.DOWNSAMPLE else 16
    return all(runs(blocks[0], role, C=16, dim=dim, sizes=[size])[0] for size in (32, 16, 8))


def test_nader_failures_through_our_feedback_loop(server, tmp_path, compat_dir):
    RECORDS = _records(compat_dir)  # the compat_dir fixture skips when ../shared is absent
    counts = {"records": 0, "caught_before_training": 0, "repaired_in_loop": 0,
              "nader_fix_rejected_by_us": 0, "not_caught": [], "not_caught_and_executes": 0,
              "nader_fix_rejected_by_us_and_crashes": 0}
    client = make_client(server, tmp_path)
    for kind, name, i, record in RECORDS:
        counts["records"] += 1
        fail, fix = record["fail_block"], record["success_block"]
        plan = f"NADER record {kind}/{name}/{i}"
        modifier = Modifier(client, rounds=3)
        if kind == "base":
            caught = not check_base_block(fail["base_block"]).ok
            fix_ok = check_base_block(fix["base_block"]).ok
            server.responder = ScriptedLLM({plan: [fail["base_block"], fix["base_block"]]})
            m = modifier.write_block(fail["base_block"], plan, arch_id=plan, reject_unchanged=False)
        else:  # the stem or downsample block failed: the base block is fine, the network does not build
            failing_arch = _arch({**fix, "stem_block": fail["stem_block"], "downsample+block": fail["downsample+block"]},
                                 fix)
            caught = not check_architecture(failing_arch, "nb201").ok
            fixed_arch = _arch(fix, fix)
            fix_ok = check_architecture(fixed_arch, "nb201").ok
            stem_down = fixed_arch[fixed_arch.index("##" + _name(fix["base_block"]) + "_stem##"):]
            server.responder = ScriptedLLM({plan: [fix["base_block"]]}, interface=stem_down)
            m = modifier.modify(failing_arch, plan, arch_id=plan, reject_unchanged=False)
        counts["caught_before_training"] += caught
        counts["nader_fix_rejected_by_us"] += not fix_ok
        counts["repaired_in_loop"] += m.ok
        failing_text, role = (fail["base_block"], Role.BASE) if kind == "base" else (fail["stem_block"], Role.STEM)
        if not caught:
            counts["not_caught"].append(f"{kind}/{name}: {record['error']}")
            counts["not_caught_and_executes"] += _executes(failing_text, role)
        if not fix_ok:
            fixed_text = fix["base_block"] if kind == "base" else fix["stem_block"]
            counts["nader_fix_rejected_by_us_and_crashes"] += not _executes(fixed_text, role)
    client.close()
    print("\nfail2success replay:", json.dumps(counts, indent=1))
    assert counts["records"] == len(RECORDS) >= 10
    # Every failure NADER's checker caught that ours lets through runs in PyTorch (a false
    # rejection of NADER's), and every fix NADER accepted that ours rejects crashes when run.
    assert counts["not_caught_and_executes"] == len(counts["not_caught"]), counts["not_caught"]
    assert counts["nader_fix_rejected_by_us_and_crashes"] == counts["nader_fix_rejected_by_us"]
    assert counts["repaired_in_loop"] == counts["records"] - counts["nader_fix_rejected_by_us"]
