"""`nader-search bench-nad`: the NAD benchmark's table, against an endpoint or in replay.

Progress goes to stderr, one line per LLM call (role, tokens, tokens/s, cost, requests done and
ETA; redrawn in place on a terminal). Each request's result is appended to RUN/bench-nad.jsonl as
it completes; run again with the same --run-dir and the requests done are read back, not sent.

Exit status: 0 the table was printed, 1 a setting stopped early (a cap, the endpoint down, a
replay miss: run again with the same --run-dir to resume from the record), 2 usage or
configuration error, or a request the endpoint rejected (a wrong URL, key or model, a prompt
too long): one line, no traceback (NADER_DEBUG=1 shows it).
"""
from __future__ import annotations

import json
import os
import sys

import click

from nader.inputs.cli import options
from nader.inputs.settings import Choice, Integer, Path, Setting, Text, output_format

from ..llm.options import LLM_SETTINGS
from .nad import SETTINGS


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command("bench-nad", context_settings={"help_option_names": ["-h", "--help"]})
@options(Setting("--run-dir", Path("dir"), required=True,
                 help="Where LLM calls, experiences (RUN/runs.sqlite) and each request's result (RUN/bench-nad.jsonl)"
                      " are recorded; the same --run-dir resumes, reading back the requests done."),
         Setting("--setting", Choice(tuple(SETTINGS), case_sensitive=True), "Settings to run (repeatable).",
                 name="settings", multiple=True, shown_default="all"),
         Setting("--rounds", Integer(1, 10), "Modifier rounds with feedback (k); settings without feedback use 1.",
                 default=3),
         Setting("--only", Text(), "Run only requests whose id starts with this (resnet_basic/micro)."),
         Setting("--limit", Integer(1), "Run at most this many requests."),
         output_format("table", "json"), *LLM_SETTINGS)
def bench_nad_command(run_dir, settings, rounds, only, limit, fmt, **llm):
    """Run the Modifier on the NAD benchmark's 100 requests and print, per setting, the
    executability (first reply verifies), executability after feedback, success rate and
    tokens per request (documentation page "The agents")."""
    from ..knowledge.embedders import EmbedderUnavailable, default_embedder
    from ..llm import LLMClient, LLMError
    from ..llm.options import config_from_options
    from ..llm.progress import CallProgress
    from . import nad, results
    from .runner import format_table, run_setting, setting_rounds

    try:
        config = config_from_options(**llm)
        client = LLMClient.from_config(config, store=run_dir, replay=llm.get("replay"), role="modifier")
        embedder = default_embedder()
    except (LLMError, EmbedderUnavailable, OSError) as exc:
        if os.environ.get("NADER_DEBUG"):
            raise
        _fail(str(exc))
    requests = [r for r in nad.load_requests() if only is None or r.id.startswith(only)][:limit]
    if not requests:
        _fail(f"no request id starts with {only!r}")
    rows = []
    settings = settings or tuple(SETTINGS)
    done = {s: results.load_done(run_dir, s, setting_rounds(s, rounds)) for s in settings}
    progress = CallProgress(unit="requests")
    progress.set_total(len(settings) * len(requests),
                       done=sum(r.id in done[s] for s in settings for r in requests))
    client.add_observer(progress)

    def finished(setting, result):
        results.append(run_dir, setting, setting_rounds(setting, rounds), result)
        progress.unit_done()

    try:
        for setting in settings:
            result = run_setting(client, setting, requests, run_dir=run_dir, embedder=embedder, rounds=rounds,
                                 progress=finished, done=done[setting])
            rows.append(result.row())
            if result.stopped:
                break
    except KeyboardInterrupt:
        click.echo("\ninterrupted; run again with the same --run-dir to resume", err=True)
        sys.exit(130)
    except (LLMError, EmbedderUnavailable, OSError) as exc:  # a rejected request: the next would be too
        if os.environ.get("NADER_DEBUG"):
            raise
        _fail(str(exc))
    finally:
        client.close()
        progress.close()
    if fmt == "json":
        click.echo(json.dumps({"settings": rows, "requests": len(requests)}, indent=2))
    else:
        click.echo(format_table(rows), nl=False)
    sys.exit(1 if any(r["stopped"] for r in rows) else 0)
