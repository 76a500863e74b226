"""`nadc examples`: the examples shipped in the package are listed, printed and written out, and
the written search settings run as they are."""
from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import REPO_ROOT
from nader.cli import main as search_main
from nader.compiler.cli import cli as nadc


def test_lists_every_shipped_example_with_its_first_sentence():
    r = CliRunner().invoke(nadc, ["examples"])
    assert r.exit_code == 0
    rows = dict(line.split(None, 1) for line in r.output.splitlines())
    on_disk = {p.name for p in (REPO_ROOT / "examples").iterdir() if p.suffix in (".nad", ".toml", ".py")
               and not p.name.startswith("_")}
    assert set(rows) == on_disk
    assert rows["resnet_basic.nad"].startswith("A ResNet basic block")


def test_prints_one_by_name_or_stem_and_refuses_an_unknown_one():
    text = (REPO_ROOT / "examples" / "resnet_basic.nad").read_text()
    assert CliRunner().invoke(nadc, ["examples", "resnet_basic.nad"]).output == text
    assert CliRunner().invoke(nadc, ["examples", "resnet_basic"]).output == text
    r = CliRunner().invoke(nadc, ["examples", "nope"])
    assert r.exit_code == 2 and "no example named 'nope'" in r.output


def test_the_written_search_settings_run_from_their_folder(tmp_path):
    r = CliRunner().invoke(nadc, ["examples", "--all", "-o", str(tmp_path / "ex")])
    assert r.exit_code == 0 and (tmp_path / "ex" / "resnet_basic.nad").is_file()
    r = CliRunner().invoke(search_main, ["run", str(tmp_path / "ex" / "search.toml"), "--trials", "1", "--epochs", "1",
                                         "--threads", "1", "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["trials"] == 1 and out["run_dir"] == str(tmp_path / "ex" / "runs" / "example")
