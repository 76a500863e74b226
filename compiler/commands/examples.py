"""`nadc examples`: the examples shipped in the package (`nader.examples`), listed or written out,
so that a pip install has them without the repository."""
from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

import click

from nader.inputs.cli import options
from nader.inputs.settings import Flag, Path as PathKind, Setting
from nader.inputs.writes import WriteRefused, write_file

SUFFIXES = (".nad", ".toml", ".py")


def shipped() -> dict:
    """name -> resource of every shipped example, in name order."""
    folder = resources.files("nader.examples")
    return {f.name: f for f in sorted(folder.iterdir(), key=lambda f: f.name)
            if f.name.endswith(SUFFIXES) and not f.name.startswith("_")}


def leading_comment(name: str, text: str) -> str:
    """The first line of a file's leading comment or docstring."""
    if name.endswith(".py"):
        try:
            doc = ast.get_docstring(ast.parse(text)) or ""
        except SyntaxError:
            doc = ""
        return doc.strip().splitlines()[0] if doc.strip() else ""
    lead = []
    for line in text.splitlines():
        if not line.startswith("#") or line.startswith("##"):
            break
        lead.append(line.lstrip("#").strip())
    first = " ".join(lead)
    return first.split(". ")[0].rstrip(".") if first else ""


@click.command("examples")
@click.argument("name", required=False)
@options(Setting(("-o", "--output"), PathKind(), "Write the example to this file, or into this folder under its own name."),
         Setting("--all", Flag(), "Write every example into the folder given by -o.", name="every"))
def examples_cmd(name, output, every):
    """List the shipped examples, print one (NAME), or write it out (-o).

    \b
    nadc examples                         list them
    nadc examples resnet_basic.nad        print one
    nadc examples --all -o my-examples    write every one into a folder
    """
    found = shipped()
    if every:
        if not output:
            raise click.UsageError("--all writes files: give -o FOLDER")
        folder = Path(output)
        folder.mkdir(parents=True, exist_ok=True)
        for key, res in found.items():
            _put(folder / key, res.read_text(encoding="utf-8"))
        return
    if name is None:
        width = max(map(len, found), default=0)
        for key, res in found.items():
            click.echo(f"{key:<{width}}  {leading_comment(key, res.read_text(encoding='utf-8'))}")
        return
    res = found.get(name) or found.get(next((k for k in found if Path(k).stem == name), ""))
    if res is None:
        raise click.UsageError(f"no example named {name!r}; `nadc examples` lists them: {', '.join(found)}")
    text = res.read_text(encoding="utf-8")
    if output is None:
        click.echo(text, nl=False)
        return
    target = Path(output)
    _put(target / res.name if target.is_dir() else target, text)


def _put(path: Path, text: str) -> None:
    try:
        write_file(path, text, what="example")
    except WriteRefused as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {path}", err=True)
