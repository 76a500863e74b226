"""What `benchmarks/real_llm.py` reads back from its runs' records: the calls a server answered,
the Modifier's first replies judged by this tree's compiler, and GENIUS's trials.

Everything here reads a finished run folder (`runs.sqlite`) and calls nothing, so a work folder
can be judged again after a change to the compiler (`real_llm.py --summarize`).
"""
from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

#: the first prompt of each Modifier conversation: whole block, or edits of the parent
FIRST_PROMPTS = ("modifier_implement.v1", "modifier_edits.v1", "modifier_edits.v2", "modifier_edits.v3")
#: E is also reported apart for the requests after these (issue 39: "beyond the first six")
FIRST_REQUESTS = 6


def _read(run_dir: Path, query: str, args=()) -> list:
    path = run_dir / "runs.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def block_parses(text: str) -> bool:
    """The reply holds block text that parses (syntactic validity)."""
    from nader.dsl.extract import extract_blocks
    from nader.dsl.parser import parse

    block = extract_blocks(text).text
    return bool(block.strip()) and parse(block).syntax_ok


def edits_parse(text: str) -> bool:
    """The reply holds edits that parse (nader.dsl.edits), whether or not they apply."""
    from nader.dsl.edits import parse_edits

    return not parse_edits(text).problems


def names_a_cell(text: str) -> bool:
    """The reply names a NAS-Bench-201 cell (GENIUS's `op_list`)."""
    from nader.search.spaces.nb201 import NotInSpace, parse_cell_reply

    try:
        parse_cell_reply(text)
        return True
    except NotInSpace:
        return False


def call_figures(run_dir: Path, valid) -> dict:
    """Per role, from the run's `llm_calls` table: what the server did with our requests; `valid`
    judges each reply's text."""
    from nader.agents.modifier import Modifier
    from nader.agents.llm.profiles import system_tokens_at_least

    rows = _read(run_dir, "SELECT role, status, error, prompt_tokens, completion_tokens, latency_s, reply "
                          "FROM llm_calls WHERE kind = 'chat' AND source = 'endpoint'")
    reference_at_least = system_tokens_at_least(Modifier.language_reference())
    roles: dict = {}
    for role, status, error, prompt, completion, latency, reply in rows:
        r = roles.setdefault(role, {"calls": 0, "failed": 0, "timed_out": 0, "latency": [], "tok_s": [],
                                    "prompt_tokens": [], "syntax_ok": 0, "replies": 0, "reference_arrived": 0,
                                    "cut": 0, "completion": []})
        r["calls"] += 1
        r["timed_out"] += (error or "").count("no reply within")  # attempts, retried or final
        if status == "failed":
            r["failed"] += 1
            continue
        r["latency"].append(latency or 0.0)
        if completion and latency:
            r["tok_s"].append(completion / latency)
        r["completion"].append(completion or 0)
        r["prompt_tokens"].append(prompt or 0)
        answer = json.loads(reply) if reply else {}
        text = answer.get("text") or ""
        r["cut"] += answer.get("finish_reason") == "length"  # stopped by max_tokens, mid-line maybe
        r["replies"] += 1
        r["syntax_ok"] += valid(text)
        r["reference_arrived"] += (prompt or 0) >= reference_at_least
    return roles


def parent_of(request: dict) -> str:
    """The block the Modifier was asked to change: the first fenced block of the first user turn."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user.split("```\n", 1)[1].split("\n```", 1)[0] + "\n"


def first_replies(run_dir: Path) -> list[dict]:
    """The Modifier's first reply to each request, in request order, judged as issue 28 defines E:
    the reply's block (or the block its edits make of the parent) verifies as a base block and is
    not the parent's graph, as written (`ok`) and after the compiler's repair (`repaired`, what
    `--repair auto` runs, with no further call). `block` is the block E counted (None: none). A
    reply the run's record answered again (a resumed run) counts once."""
    from nader.compiler.edit_reply import check_edit_reply
    from nader.compiler.passes.canonical import canonical_hash
    from nader.compiler.reply_checks import check_base_block
    from nader.compiler.reply_repair import repair_edit_reply, repair_reply
    from nader.dsl.parser import parse

    rows = _read(run_dir, "SELECT arch_id, prompt, request, reply FROM llm_calls WHERE kind = 'chat' "
                          "AND role = 'modifier' AND status != 'failed' AND source != 'cache' "
                          f"AND prompt IN ({', '.join('?' * len(FIRST_PROMPTS))}) "
                          "ORDER BY call_id",
                 FIRST_PROMPTS)
    out = []
    for arch_id, prompt, request, reply in rows:
        parent = parent_of(json.loads(request))
        parent_hash = canonical_hash(parse(parent).program.blocks[0])
        text = (json.loads(reply) if reply else {}).get("text") or ""
        edits = prompt.startswith("modifier_edits.")
        entry = {"request": arch_id, "prompt": prompt, "reply": text, "parent": parent, "ok": False,
                 "repaired": False, "block": None, "fixes": []}
        try:
            check = check_edit_reply(text, parent, parent_hash) if edits else check_base_block(text, parent_hash)
            fixed = None if check.ok else (repair_edit_reply(text, parent, parent_hash) if edits
                                           else repair_reply(check, parent_hash))
        except Exception:  # noqa: BLE001 - a reply the checks raise on is not executable
            out.append(entry)
            continue
        entry["ok"] = check.ok
        entry["repaired"] = check.ok or fixed is not None
        entry["block"] = check.text if check.ok else (fixed.check.text if fixed is not None else None)
        entry["fixes"] = [f.kind for f in fixed.result.applied] if fixed is not None else []
        out.append(entry)
    return out


def does_what_was_asked(entry: dict) -> bool | None:
    """bench-nad's machine checks of the request (`nad.score`) on the block E counted; None when
    the request is not one of the NAD benchmark's or no block was counted."""
    from nader.agents.bench import nad

    if entry["block"] is None:
        return None
    request = nad.request_by_id(nad.load_requests(), entry["request"].split(":", 1)[-1])
    return None if request is None else nad.score(request, entry["block"])[1].ok


def _rate(values: list[bool]):
    return round(sum(values) / len(values), 3) if values else None


def first_reply_e(run_dir: Path) -> dict:
    """E of the Modifier's first replies, as written and repaired, over all requests and apart for
    the first FIRST_REQUESTS and the rest; and how many of the blocks E counts pass the request's
    machine checks."""
    entries = first_replies(run_dir)
    head, rest = entries[:FIRST_REQUESTS], entries[FIRST_REQUESTS:]
    asked = [does_what_was_asked(e) for e in entries if e["repaired"]]
    return {"replies": len(entries), "e": _rate([e["ok"] for e in entries]),
            "e_repair": _rate([e["repaired"] for e in entries]),
            "e_repair_first": _rate([e["repaired"] for e in head]), "e_repair_beyond": _rate([e["repaired"] for e in rest]),
            "beyond": len(rest),
            "checks_passed": f"{sum(1 for a in asked if a)}/{sum(1 for a in asked if a is not None)}"}


def genius_figures(run_dir: Path) -> dict:
    """GENIUS's proposals by status, and the best evaluated architecture by validation accuracy with
    its test accuracy (the figure a tabular run reports)."""
    rows = _read(run_dir, "SELECT arch_id, status, valid_acc, test_acc, change FROM archs WHERE operator = 'genius'")
    statuses: dict = {}
    for _, status, *_ in rows:
        statuses[status] = statuses.get(status, 0) + 1
    root = _read(run_dir, "SELECT valid_acc, test_acc FROM archs WHERE arch_id = 0")
    scored = [(v, t, a) for a, s, v, t, _ in rows if s == "ok" and v is not None]
    best = max(scored, default=None)
    return {"proposals": len(rows), "statuses": statuses, "root": root[0] if root else None,
            "best_valid": best[0] if best else None, "best_test": best[1] if best else None,
            "best_arch": best[2] if best else None}


def print_calls(title: str, roles: dict) -> None:
    print(f"   {title}")
    for role, r in sorted(roles.items()):
        lat = r["latency"]
        line = (f"   {role:>10}: {r['calls']} calls, {r['failed']} failed, {r['timed_out']} attempts timed out")
        if lat:
            line += (f"; latency median {statistics.median(lat):.1f} s, slowest {max(lat):.1f} s;"
                     f" {statistics.median(r['tok_s']) if r['tok_s'] else 0:.1f} tokens/s;"
                     f" prompt tokens median {statistics.median(r['prompt_tokens']):.0f}")
        if r["replies"]:
            line += f"; valid {r['syntax_ok']}/{r['replies']} ({r['cut']} cut at max_tokens)"
            if role == "modifier":
                line += f"; language reference counted {r['reference_arrived']}/{r['replies']}"
        print(line)


def print_summary(results: dict) -> None:
    """Markdown tables: one row per step and role (what benchmarks/README.md quotes), then GENIUS's
    runs."""
    print("\n| step | calls | median s | slowest s | tokens/s | timed out | valid replies | cut at max_tokens |"
          " E | E after feedback | E (issue 28) | E with repair | first 6 / beyond | repaired blocks passing the"
          " request's checks |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, (row, roles, _) in results.items():
        for role, r in sorted(roles.items()):
            lat = r["latency"] or [0.0]
            speed = statistics.median(r["tok_s"]) if r["tok_s"] else 0.0
            split = (f"{row.get('first_e_repair_first')} / {row.get('first_e_repair_beyond')}"
                     f" ({row.get('first_beyond')} beyond)") if "first_e_repair_first" in row else "-"
            print(f"| {label} ({role}) | {r['calls']} | {statistics.median(lat):.1f} | {max(lat):.1f} | {speed:.1f} |"
                  f" {r['timed_out']} | {r['syntax_ok']}/{r['replies']} | {r['cut']} |"
                  f" {row.get('executability', '-')} | {row.get('executability_after_feedback', '-')} |"
                  f" {row.get('first_e', '-')} | {row.get('first_e_repair', '-')} | {split} |"
                  f" {row.get('first_checks_passed', '-')} |")
    genius = {label: row for label, (row, _, _) in results.items() if "proposals" in row}
    if genius:
        print("\n| GENIUS run | proposals | evaluated | invalid | duplicate | root valid / test | best valid | its test |")
        print("|---|---|---|---|---|---|---|---|")
        for label, g in genius.items():
            s = g["statuses"]
            root = "{:.2f} / {:.2f}".format(*g["root"]) if g["root"] and None not in g["root"] else "-"
            best = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
            print(f"| {label} | {g['proposals']} | {s.get('ok', 0)} | {s.get('invalid', 0)} | {s.get('duplicate', 0)} |"
                  f" {root} | {best(g['best_valid'])} | {best(g['best_test'])} |")


def nad_row(run: Path, row: dict | None = None) -> dict:
    """bench-nad's figures for a run (from its printed row, else from its `bench-nad.jsonl`) with
    the first replies' E judged by this tree."""
    if not row:
        path = run / "bench-nad.jsonl"
        results = [json.loads(line)["result"] for line in path.read_text().splitlines()] if path.exists() else []
        rate = (lambda key: round(sum(r[key] for r in results) / len(results), 3)) if results else (lambda key: None)
        row = {"requests": len(results), "executability": rate("first_ok"),
               "executability_after_feedback": rate("ok"), "success": rate("success")}
    return {**row, **{f"first_{k}": v for k, v in first_reply_e(run).items()}}


def recorded_results(work: Path) -> dict:
    """The summary's rows from a finished work folder, labelled by its run folders' names."""
    results = {}
    for run in sorted(p for p in work.glob("nad-*") if p.is_dir()):
        label = run.name.removeprefix("nad-").rstrip("-").replace("-", " ")
        results[label] = (nad_row(run), call_figures(run, edits_parse if "edit" in label else block_parses), 0.0)
    for run in sorted(p for p in work.glob("genius*") if p.is_dir()):
        label = "GENIUS, " + (run.name.removeprefix("genius").strip("-").replace("-", " ") or "nb201 cells")
        results[label] = (genius_figures(run), call_figures(run, names_a_cell), 0.0)
    return results
