"""`nader-search read PAPERS... --kb KB`: the Reader, from the command line.

Exit status: 0 every paper read (added, known, irrelevant or without ideas), 1 some paper failed
or the run stopped (a cap, the endpoint down, a replay miss; run again to resume), 2 usage or
configuration error (a wrong URL, key or model included: the endpoint's 401, 403, 404). One line per problem on stderr, no traceback (NADER_DEBUG=1 shows them).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys

import click

from nader.inputs.cli import options
from nader.inputs.settings import Path, Setting, output_format

from ..knowledge.options import KB
from ..llm.options import LLM_SETTINGS


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _usage_line(usage) -> str:
    t = usage.total
    cost = f"${t.cost_usd:.4f}" + (f" (+{t.unpriced_calls} calls without a price)" if t.unpriced_calls else "")
    return (f"LLM: {t.calls} endpoint calls, {t.recorded_calls} answered from the record, {t.failed_calls} failed;"
            f" {t.prompt_tokens} tokens in, {t.completion_tokens} out; {cost}")


@click.command("read", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("papers", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="PAPERS...")
@options(KB, Setting("--run-dir", Path("dir"), "Where LLM calls are recorded (RUN/runs.sqlite).",
                     shown_default="the knowledge base directory"),
         output_format("table", "json"), *LLM_SETTINGS)
def read_command(papers, kb_path, run_dir, fmt, **llm):
    """Read PAPERS (.txt, .md, .pdf, or .jsonl with title/abstract/text) into the knowledge base.

    For each paper: a relevance judgement on title and abstract, design ideas from the method
    section, and FairNAD attribute tags for each idea (documentation page "The LLM layer and the Reader"). Papers already in the
    knowledge base cost no call.
    """
    try:
        code = _run(papers, kb_path, run_dir, fmt, llm)
    except KeyboardInterrupt:
        click.echo("\ninterrupted; run again to resume", err=True)
        code = 130
    sys.exit(code)


def _run(paths, kb_path, run_dir, fmt, llm) -> int:
    from ..knowledge import (ATTRIBUTE_TREE, EmbedderUnavailable, EndpointEmbedder, Idea, KnowledgeBase,
                             KnowledgeBaseError)
    from ..llm import LLMClient, LLMError
    from ..llm.options import config_from_options
    from ..llm.progress import CallProgress
    from .papers import PaperError, read_papers
    from .reader import Reader

    expected = (LLMError, PaperError, KnowledgeBaseError, EmbedderUnavailable, OSError)
    client = kb = None
    progress = CallProgress(unit="papers")
    try:
        config = config_from_options(**llm)
        papers, seen = [], set()
        for path in paths:
            for paper in read_papers(path):
                if paper.paper_id not in seen:
                    seen.add(paper.paper_id)
                    papers.append(paper)
        client = LLMClient.from_config(config, store=run_dir or kb_path, replay=llm.get("replay"), role="reader")
        # With an embedding model configured, the knowledge base embeds through the endpoint (the
        # same client: recorded and replayable); otherwise with its own (the offline local model).
        embedder = EndpointEmbedder(client) if config.embedding_model else None
        kb = KnowledgeBase.open(kb_path, embedder=embedder)
        reader = Reader(client, kb, tree=ATTRIBUTE_TREE, make_idea=Idea)
        client.add_observer(progress)
        progress.set_total(len(papers))

        async def main():
            try:
                return await reader.read_all(papers, on_done=lambda _outcome: progress.unit_done())
            finally:
                await client.aclose()

        outcomes, stopped = asyncio.run(main())
    except expected as exc:
        if os.environ.get("NADER_DEBUG"):
            raise
        _fail(str(exc))
    finally:
        for resource in (client, kb):
            if resource is not None:
                resource.close()
        if client is not None:
            progress.close()
    if fmt == "json":
        click.echo(json.dumps({"papers": [o.as_dict() for o in outcomes], "usage": client.usage.as_dict(),
                               "stopped": None if stopped is None else str(stopped)}, indent=2))
    else:
        for o in outcomes:
            detail = f"{o.ideas_added} new of {o.ideas_found} ideas" if o.status == "added" else (o.reason or "")
            if o.status in ("known", "stopped"):
                detail = ""
            click.echo(f"{o.status:10}  {o.title[:60]:60}  {detail}".rstrip())
        click.echo(_usage_line(client.usage))
    for o in outcomes:
        if o.status == "failed":
            click.echo(f"failed: {o.source}: {o.reason}", err=True)
    if getattr(stopped, "setup_error", False):  # a wrong URL, key or model
        click.echo(f"error: {stopped}", err=True)
        return 2
    if stopped is not None:
        click.echo(f"stopped: {stopped}", err=True)
    return 1 if stopped is not None or any(o.status == "failed" for o in outcomes) else 0
