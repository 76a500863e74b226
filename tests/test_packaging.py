"""Packaging: the wheel holds one import package, `nader`, with the grammar inside.

The repository's top-level folders (dsl/, compiler/, ...) are installed as
subpackages of `nader` through `package-dir` in pyproject.toml. Mistakes
there only show in an installed copy (the editable install maps folders
directly), so this test builds a wheel from a copy of the tree, installs it
into a fresh virtual environment and imports from it.

Offline by construction: the fresh venv is made WITHOUT system site packages
and WITHOUT pip; the wheel is installed with the dev venv's pip
(`pip --python <fresh> install --no-deps --no-index`). The pure-Python runtime
dependencies the front end needs (lark, click) are copied from the running
environment into a folder the fresh venv sees through a `.pth` file, rather
than fetched from an index that may not be reachable. The fresh venv thus sees
the wheel, lark and click and nothing else: not the repository, not the
editable install, not torch.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
GENERIC_TOP_LEVEL = ("dsl", "compiler", "runtime", "agents", "grammar", "search", "inputs")
IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                ".hypothesis", "runs", "*.onnx", ".whl", "tests", "benchmarks")


# -- pyproject.toml is in step with the folders ------------------------------------------

def _folder_packages() -> set[str]:
    """Every folder with an __init__.py under a package-dir root, as its dotted name."""
    found = set()
    for package, folder in SETUPTOOLS["package-dir"].items():
        root = REPO_ROOT / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    return found


def test_package_dir_maps_every_top_level_folder():
    mapping = SETUPTOOLS["package-dir"]
    assert mapping.get("nader") == "nader"
    for name in GENERIC_TOP_LEVEL:
        assert mapping.get(f"nader.{name}") == name, f"{name}/ must be installed as nader.{name}"


def test_packages_list_covers_every_folder():
    listed = set(SETUPTOOLS["packages"])
    folders = _folder_packages()
    missing = sorted(folders - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    stale = sorted(listed - folders)
    assert not stale, f"listed in pyproject.toml but no folder with __init__.py: {stale}"


def test_grammar_is_package_data():
    assert "*.lark" in PYPROJECT["tool"]["setuptools"]["package-data"]["nader.grammar"]
    assert (REPO_ROOT / "grammar" / "nad.lark").is_file()


def test_the_install_section_pins_torchs_cpu_build_and_pandas_has_an_extra():
    """README's install lines take torch's CPU build through the pins (without them pip takes the CUDA
    build: it says so); its extras table names extras that exist; pandas, which
    Study.trials_dataframe returns a DataFrame with, has the `api` extra, `all`, a pin and dev."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Install (as a library)", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.split("```")[1].splitlines() if ln.startswith("pip install")]
    assert lines and all("-c constraints.txt" in ln for ln in lines), lines
    assert "CUDA build" in section and "CPU build" in section
    extras = PYPROJECT["project"]["optional-dependencies"]
    listed = [name for name in (ln.split("`[", 1)[1].split("]`", 1)[0] for ln in section.splitlines()
                                if ln.startswith("| `["))]
    assert "api" in listed and set(listed) <= set(extras), listed
    assert extras["api"] == ["pandas>=2"] and "api" in extras["all"][0] and "pandas>=2" in extras["dev"]
    pins = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    assert any(ln.startswith("pandas==") for ln in pins) and any(ln.startswith("torch==") for ln in pins)


# -- the built wheel, installed into a fresh venv -----------------------------------------

@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    shutil.copytree(REPO_ROOT, src, ignore=IGNORE)
    dist = work / "dist"
    try:
        import build  # noqa: F401  (in the dev extra)
        command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check",
                   "--outdir", str(dist), str(src)]
    except ImportError:
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                   "--wheel-dir", str(dist), str(src)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=work, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = dist.glob("*.whl")
    return built


def test_wheel_contents(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"nader", "nader_toolchain-0.1.0.dist-info"}, tops
    assert "nader/grammar/nad.lark" in names
    prompts = sorted(p.name for p in (REPO_ROOT / "agents" / "prompts").glob("*.j2"))
    assert prompts and all(f"nader/agents/prompts/{name}" in names for name in prompts), "prompt templates"
    assert "nader/runtime/nb201_splits.json" in names  # NAS-Bench-201's split files
    templates = sorted(p.name for p in (REPO_ROOT / "search" / "report" / "templates").glob("*.j2"))
    assert templates and all(f"nader/search/report/templates/{name}" in names for name in templates), "templates"
    examples = sorted(p.name for p in (REPO_ROOT / "examples").iterdir() if p.suffix in (".nad", ".toml", ".py"))
    assert "resnet_basic.nad" in examples and "search.toml" in examples
    assert all(f"nader/examples/{name}" in names for name in examples), "examples"
    for package in SETUPTOOLS["packages"]:
        assert package.replace(".", "/") + "/__init__.py" in names, package
    top_level = zipfile.ZipFile(wheel).read("nader_toolchain-0.1.0.dist-info/top_level.txt").decode().split()
    assert top_level == ["nader"]
    entry_points = zipfile.ZipFile(wheel).read("nader_toolchain-0.1.0.dist-info/entry_points.txt").decode()
    assert "nadc = nader.compiler.cli:main" in entry_points


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv (no system site packages, no pip) with the wheel installed; its python."""
    work = tmp_path_factory.mktemp("venv")
    env_dir = work / "env"
    venv.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--no-index", "--quiet", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # lark and click, copied (pure Python) so that no index is needed.
    deps = work / "deps"
    deps.mkdir()
    import click
    import lark
    for module in (lark, click):
        shutil.copytree(Path(module.__file__).parent, deps / module.__name__, ignore=IGNORE)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_nader_test_deps.pth").write_text(str(deps) + "\n", encoding="utf-8")
    return python


def run_in(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    return subprocess.run([str(python), "-I", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_installed_package_imports_and_parses(installed, tmp_path):
    done = run_in(installed, """
        import sys, sysconfig
        from importlib import resources
        from pathlib import Path
        import nader, nader.dsl, nader.compiler, nader.grammar, nader.compiler.cli
        site = Path(sysconfig.get_paths()["purelib"]).resolve()
        assert Path(nader.__file__).resolve().is_relative_to(site), nader.__file__
        grammar = resources.files("nader.grammar").joinpath("nad.lark")
        assert grammar.is_file() and "HEADER" in grammar.read_text()
        assert Path(str(grammar)).resolve().is_relative_to(site)
        from nader.dsl import parse
        r = parse("##A##\\n0:input\\n1:output\\n2:Conv2d(out_channels=C,kernel_size=3)\\n0->2\\n2->1\\n", "a.nad")
        assert r.ok and r.diagnostics == [], r.diagnostics
        assert [n.op_name for n in r.program.blocks[0].nodes] == ["input", "output", "Conv2d"]
        broken = parse("##A##\\n0:input\\n0-1\\n", "b.nad")  # Lark reads `0-1`, with the installed grammar
        assert [d.code.code for d in broken.diagnostics] == ["NAD102"], broken.diagnostics
        assert "torch" not in sys.modules
        from nader.runtime.splits import bundled_split
        assert [len(v) for v in bundled_split("cifar-split.txt").values()] == [25000, 25000]
        print("OK")
        print("\\n".join(sorted(p.name for p in site.iterdir())))
    """, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, *site_entries = done.stdout.splitlines()
    assert first == "OK"
    for name in GENERIC_TOP_LEVEL:
        assert name not in site_entries, f"a top-level `{name}` package was installed"
    assert "nader" in site_entries


def test_installed_nadc_script(installed, tmp_path):
    (tmp_path / "a.nad").write_text("##A##\n0:input\n1:output\n2:Relu\n0->2\n2->1\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    nadc = installed.parent / "nadc"
    version = subprocess.run([str(nadc), "--version"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stderr
    listed = subprocess.run([str(nadc), "examples"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "resnet_basic.nad" in listed.stdout, listed.stderr
    wrote = subprocess.run([str(nadc), "examples", "resnet_basic.nad", "-o", "example.nad"], capture_output=True,
                           text=True, cwd=tmp_path, env=env)
    assert wrote.returncode == 0 and (tmp_path / "example.nad").read_text().count("##") >= 6, wrote.stderr
    checked = subprocess.run([str(nadc), "a.nad", "--format", "concise"], capture_output=True, text=True,
                             cwd=tmp_path, env=env)
    assert checked.returncode == 1
    assert "a.nad:4:3: error[NAD104] unknown operation `Relu`" in checked.stderr
