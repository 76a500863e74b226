"""`nader-search llm check`: what the configured endpoint does with the product's requests, and
the model profile to use with it (agents/llm/check.py measures; this prints and writes).

Exit status: 0 usable as is, 1 usable with degradations (each listed), 2 unreachable or a
configuration error (one `error:` line, no traceback).
"""
from __future__ import annotations

import json
import sys

import click

from nader.inputs.cli import options
from nader.inputs.settings import Path, Setting, output_format

from .options import LLM_SETTINGS

#: Decorates a click command with the LLM settings (agents/llm/options.py's LLM_SETTINGS); they
#: arrive as keyword arguments named as in OPTION_NAMES (an old spelling given arrives under the
#: new name, after a warning).
llm_options = options(*LLM_SETTINGS)


@click.group("llm", context_settings={"help_option_names": ["-h", "--help"]})
def llm_group():
    """The LLM endpoint: check what it supports."""


@llm_group.command("check")
@options(Setting("--write", Path("file"), name="write_path",
                 help='Save the recommended profile as [llm.profiles."MODEL"] in this TOML file (other keys kept).'),
         output_format("text", "json"), *LLM_SETTINGS)
def check_command(write_path, fmt, **llm):
    """Measure the endpoint in about a minute, whatever the model's quality: the models it lists
    and their context length, whether a system message arrives, which JSON modes and grammars it
    accepts and what they cost per token, speed and time to first token, usage reporting, the
    token-limit parameter. Ends with the recommended profile (documentation page "The LLM layer and the Reader")."""
    from .check import check_endpoint
    from .errors import LLMError
    from .options import config_from_options
    from .profile_file import write_profile

    try:
        config = config_from_options(**llm)
        if llm.get("replay"):
            raise click.UsageError("llm check measures a live endpoint: --replay does not apply")
        report = check_endpoint(config)
        if write_path:
            write_profile(write_path, report.profile, _profile_comments(report))
    except LLMError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
        sys.exit(130)
    if fmt == "json":
        click.echo(json.dumps({**report.as_dict(), "written": write_path}, indent=2, sort_keys=True))
    else:
        click.echo(render_check(report))
        if write_path:
            click.echo(f'profile written to {write_path} as [llm.profiles."{report.model}"]')
    sys.exit(report.exit_code)


def _profile_comments(report) -> list[str]:
    comments = [f"measured by `nader-search llm check` on {report.base_url}"]
    field = report.grammar_field
    comments.append(f"grammar-constrained decoding: {field} is obeyed" if field else
                    "grammar-constrained decoding: none obeyed")
    if report.reply_note:
        comments.append(f"edit replies: {report.reply_note}")
    return comments


def _seconds(value) -> str:
    return "-" if value is None else f"{value * 1000:.3g} ms" if value < 1 else f"{value:.2f} s"


def _probe_line(name: str, probe, base, obeys: tuple[str, str]) -> str:
    if probe.slow:
        return f"  {name:<19} {probe.note}"
    if not probe.accepted:
        return f"  {name:<19} not accepted: {probe.note}"
    relative = probe.relative_to(base)
    form = "" if probe.obeyed is None else f"; {obeys[0] if probe.obeyed else obeys[1]}"
    cost = f"{_seconds(probe.per_token)}/token" + (f", {relative:.2f}x unconstrained" if relative else "")
    return f"  {name:<19} accepted; {cost}{form}"


def render_check(report) -> str:
    """The report as text."""
    lines = [f"endpoint      {report.base_url}", f"model         {report.model}"]
    listed = ", ".join(report.listed) if report.listed else f"(none: {report.models_note})"
    lines.append(f"listed        {listed}")
    lines.append(f"context       {report.context_length or 'not said by the server'}")
    params = ", ".join(f"{k} {'accepted' if v else 'refused'}" for k, v in report.token_params.items())
    lines.append(f"token limit   {report.token_param} ({params})")
    lines.append(f"usage         {'reported' if report.usage_reported else 'not reported by the server'}")
    lines.append(f"system        {report.system}: {report.system_detail}")
    base = report.json_modes["none"]
    lines.append("JSON modes")
    lines += [_probe_line(mode, report.json_modes[mode], base, ("reply is JSON", "reply is not JSON"))
              for mode in ("none", "json_schema", "json_object")]
    lines.append("grammar")
    lines += [_probe_line(name, probe, base, ("reply obeys the grammar", "reply ignores the grammar"))
              for name, probe in report.grammar.items()]
    speed = f"{report.tokens_per_s:.1f} tokens/s" if report.tokens_per_s else "tokens/s not measured"
    lines.append(f"streaming     first token {_seconds(report.first_token_s)}; {speed}"
                 + (f"; {report.stream_note}" if report.stream_note else ""))
    p = report.profile
    context = f", context = {p.context}" if p.context else ""
    context += f", max_tokens = {p.max_tokens}" if p.max_tokens else ""
    context += f', reply = "{p.reply}"' if p.reply != "block" else ""
    lines.append(f'recommended   [llm.profiles."{p.pattern}"] token_param = "{p.token_param}", json = "{p.json}",'
                 f' system = "{p.system}", grammar = "{p.grammar}"{context}')
    if report.reply_note:
        lines.append(f"reply         {report.reply_note}")
    elif report.block_reply:
        lines.append(f"reply         a block restated with one change: {report.block_reply}")
    if report.degradations:
        lines.append("degradations")
        lines += [f"  - {d}" for d in report.degradations]
    else:
        lines.append("usable as is")
    return "\n".join(lines)
