"""`nadc verify` and the verifier's API: verdicts, constraints, roles, JSON."""
import json

import pytest

from nader.compiler.passes import ANY, verify_block
from nader.dsl import parse
from nader.dsl.ir import Role

RESNET = """##R##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:BN
4:Add
0->2
2->3
3->4
0->4
4->1
"""


def block(text):
    parsed = parse(text)
    assert parsed.ok, parsed.diagnostics
    return parsed.program.blocks[0]


def test_a_resnet_block_verifies_with_its_shapes():
    report = verify_block(block(RESNET))
    assert report.ok and report.role is Role.BASE
    assert [str(s) for s in report.shapes.shapes[4]] == ["B", "C", "H", "H"]  # the default domain: H = W
    assert [str(s) for s in verify_block(block(RESNET), domain=ANY).shapes.shapes[4]] == ["B", "C", "H", "W"]


def test_groups_give_a_width_constraint_not_an_error():
    report = verify_block(block(RESNET.replace("kernel_size=3)", "kernel_size=3,groups=8)")))
    assert report.ok
    assert report.constraints == ["C % 8 == 0"]


def test_constraints_are_merged_to_the_strongest():
    text = RESNET.replace("2:Conv2d(out_channels=C,kernel_size=3)",
                          "2:reshape(B,C/4/4,16,H,W)\n5:reshape(B,C,H,W)\n6:Conv2d(out_channels=C,kernel_size=1,groups=4)")
    text = text.replace("0->2\n2->3", "0->2\n2->5\n5->6\n6->3")
    report = verify_block(block(text))
    assert report.ok, [d.message for d in report.diagnostics]
    assert report.constraints == ["C % 16 == 0"]


def test_role_override_changes_the_contract():
    down = verify_block(block(RESNET), role=Role.DOWNSAMPLE)
    assert not down.ok
    assert any(d.code.code == "NAD311" for d in down.diagnostics)


def test_stem_stride_selects_the_stem_contract():
    stem = block("##S_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=4,stride=4)\n0->2\n2->1\n")
    assert verify_block(stem, stem_stride=4).ok
    assert not verify_block(stem, stem_stride=1).ok


def _stem(stride: int) -> str:
    return f"##S_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size={stride},stride={stride})\n0->2\n2->1\n"


@pytest.mark.parametrize("stride", [1, 2, 4, 32])
def test_without_a_stride_a_stem_verifies_at_the_one_it_has(stride):
    report = verify_block(block(_stem(stride)), stem_stride=None)
    assert report.ok and report.stem_stride == stride
    assert report.to_json()["stem_stride"] == stride


def test_a_stem_that_fits_no_stride_is_reported_at_stride_1():
    bad = block(_stem(1).replace("out_channels=dim", "out_channels=C*5"))
    report = verify_block(bad, stem_stride=None)
    assert not report.ok and report.stem_stride == 1
    assert [d.code.code for d in report.diagnostics if d.is_error] == ["NAD311"]
    assert [d.message for d in report.diagnostics] == [d.message for d in verify_block(bad, stem_stride=1).diagnostics]


def test_only_stems_carry_a_stride():
    assert verify_block(block(RESNET), stem_stride=None).stem_stride is None
    assert "stem_stride" not in verify_block(block(RESNET), stem_stride=None).to_json()


def test_nadc_verify_takes_each_stems_own_stride_unless_told_one(nadc, tmp_path):
    (tmp_path / "four.nad").write_text(_stem(4), encoding="utf-8")
    (tmp_path / "one.nad").write_text(_stem(1).replace("S_stem", "T_stem"), encoding="utf-8")
    files = [str(tmp_path / "four.nad"), str(tmp_path / "one.nad")]
    run = nadc(["verify", "--format", "json", *files])
    assert run.code == 0
    assert [(o["block"], o["ok"], o["stem_stride"]) for o in json.loads(run.stdout)] == [("S_stem", True, 4),
                                                                                      ("T_stem", True, 1)]
    told = nadc(["verify", "--format", "json", "--stem-stride", "1", *files])
    assert told.code == 1
    four, one = json.loads(told.stdout)
    assert (four["ok"], four["stem_stride"], one["ok"]) == (False, 1, True)
    assert [d["code"] for d in four["diagnostics"]] == ["NAD311"]
    text = nadc(["verify", *files])
    assert "S_stem (stem, stride 4): ok" in text.stdout and "T_stem (stem, stride 1): ok" in text.stdout


def test_diagnostics_point_at_the_offending_line_and_state_both_shapes():
    text = RESNET.replace("2:Conv2d(out_channels=C,", "2:Conv2d(out_channels=C*2,")
    report = verify_block(block(text))
    (error,) = [d for d in report.diagnostics if d.is_error]
    assert error.code.code == "NAD301" and error.span.line == 6
    assert "(B,2*C,H,H)" in error.message and "(B,C,H,H)" in error.message
    assert {label.span.line for label in error.secondary} == {2, 5}  # the BN and the input feeding Add


def test_verify_json_has_one_object_per_block(nadc, tmp_path):
    path = tmp_path / "x.nad"
    path.write_text(RESNET + RESNET.replace("##R##", "##Bad##").replace("C,kernel", "C*2,kernel"))
    result = nadc(["verify", str(path), "--format", "json"])
    assert result.code == 1
    objects = json.loads(result.stdout)
    assert [o["block"] for o in objects] == ["R", "Bad"]
    assert set(objects[0]) == {"file", "block", "role", "domain", "ok", "diagnostics", "constraints"}
    assert objects[0]["ok"] and not objects[1]["ok"] and objects[0]["domain"] == "square"
    assert objects[1]["diagnostics"][0]["code"] == "NAD301"


def test_verify_shapes_prints_every_node_shape_only_when_asked(nadc, tmp_path):
    path = tmp_path / "x.nad"
    path.write_text(RESNET.replace("##R##", "##R_downsample##").replace("out_channels=C,kernel_size=3",
                                                                        "out_channels=dim,kernel_size=3,stride=2")
                    .replace("0->4", "0->5\n5->4").replace("4:Add", "4:Add\n5:Conv2d(out_channels=dim,kernel_size=1,stride=2)"))
    objects = json.loads(nadc(["verify", str(path), "--format", "json", "--shapes"]).stdout)
    assert objects[0]["ok"], objects[0]["diagnostics"]
    assert objects[0]["shapes"]["0"] == ["B", "C", "H", "H"]  # the square domain: one size symbol
    assert objects[0]["shapes"]["2"] == ["B", "2*C", "ceil(H/2)", "ceil(H/2)"]
    assert set(objects[0]["shapes"]) == {"0", "1", "2", "3", "4", "5"}
    anywhere = json.loads(nadc(["verify", str(path), "--format", "json", "--shapes", "--domain", "any"]).stdout)
    assert anywhere[0]["domain"] == "any"
    assert anywhere[0]["shapes"]["2"] == ["B", "2*C", "ceil(H/2)", "ceil(W/2)"]
    text = nadc(["verify", str(path), "--shapes", "--domain", "any"]).stdout
    assert "  2: (B,2*C,ceil(H/2),ceil(W/2))" in text.splitlines()
    assert "ceil(H/2)" not in nadc(["verify", str(path)]).stdout


def test_verify_json_reports_unreadable_and_empty_files(nadc, tmp_path):
    empty = tmp_path / "empty.nad"
    empty.write_text("")
    result = nadc(["verify", str(empty), str(tmp_path / "missing.nad"), "--format", "json"])
    assert result.code == 1
    objects = json.loads(result.stdout)
    assert [(o["block"], [d["code"] for d in o["diagnostics"]]) for o in objects] == [(None, ["NAD117"]), (None, ["NAD100"])]


def test_verify_json_ok_follows_errors_only(nadc, tmp_path):
    """A warning (NAD111, no header) leaves `ok` true, as it leaves the exit status 0 (issue 30, point 3)."""
    path = tmp_path / "nohead.nad"
    path.write_text("0:input\n1:output\n2:ReLU\n0->2\n2->1\n")
    result = nadc(["verify", str(path), "--format", "json"])
    objects = json.loads(result.stdout)
    assert result.code == 0 and [d["code"] for o in objects for d in o["diagnostics"]] == ["NAD111"]
    assert all(o["ok"] for o in objects), objects


def test_verify_imports_no_heavy_library(tmp_path):
    # An agent runs `nadc verify` once per reply: its start-up is part of every check.
    import subprocess
    import sys
    path = tmp_path / "x.nad"
    path.write_text(RESNET)
    code = ("import sys; from nader.compiler.cli import main\n"
            f"try:\n    main(['verify', '--format', 'json', {str(path)!r}])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'numpy', 'networkx', 'onnx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("text", ["2:Conv2d(out_channels=C*C*C*C,kernel_size=1)", "2:repeat(1,1,4096,4096)"])
def test_absurd_sizes_are_refused_before_allocation(text):
    src = f"##X##\n0:input\n1:output\n{text}\n3:mean(dim=(1,2,3))\n4:Mul\n0->2\n2->3\n3->4\n0->4\n4->1\n"
    report = verify_block(block(src))
    assert not report.ok
    assert any(d.code.code == "NAD313" for d in report.diagnostics)


def test_verify_leaves_the_garbage_collector_as_it_found_it(nadc, tmp_path):
    # The command turns the cyclic collector off while it runs; callers in the same process keep theirs.
    import gc
    path = tmp_path / "x.nad"
    path.write_text(RESNET)
    assert gc.isenabled()
    assert nadc(["verify", str(path), "--format", "json"]).code == 0
    assert gc.isenabled()
    assert nadc(["verify", str(tmp_path / "missing.nad")]).code == 1
    assert gc.isenabled()
