"""The search loop end to end, in process: records, resume, reproducibility, failures, stops."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nader.runtime.errors import ConfigError
from nader.search import run_search
from nader.search.loop import Observer
from nader.search.strategies.base import StopSearch
from nader.search.strategies import STRATEGIES

from search_helpers import FAULTY, ROOT_TEXT, ScriptedStrategy, script, settings, tree_rows, with_fault


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(STRATEGIES, "scripted", ScriptedStrategy)


def db(run_dir):
    return sqlite3.connect(run_dir / "runs.sqlite")


class Interrupt(Observer):
    """Raises KeyboardInterrupt (as Ctrl-C would) at an epoch of an architecture's training."""

    def __init__(self, arch_id, epoch):
        self.arch_id, self.epoch, self.loop = arch_id, epoch, None

    def started(self, loop):
        self.loop = loop

    def event(self, ev):
        jobs = self.loop.evaluator.jobs
        if ev.get("type") == "epoch" and jobs.get(ev["job_id"], (None,))[0] == self.arch_id \
                and ev["epoch"] == self.epoch:
            raise KeyboardInterrupt


class Starts(Observer):
    """Records every training start (job id, epoch it resumed from)."""

    def __init__(self):
        self.starts = []

    def event(self, ev):
        if ev.get("type") == "start":
            self.starts.append((ev["job_id"], ev.get("resumed_from", 0)))


def test_records_every_architecture_with_its_change_numbers_and_seeds(tmp_path):
    run = tmp_path / "run"
    summary = run_search(settings(run, trials=3, seeds=[777, 888]))
    assert summary.stop.code == "trials" and summary.trials == 3
    conn = db(run)
    rows = conn.execute("SELECT arch_id, parent_id, depth, status, origin, operator, change, widths, params, flops, "
                        "valid_acc, test_acc, seeds_done, text, hash FROM archs ORDER BY arch_id").fetchall()
    trained = [r for r in rows if r[3] == "ok"]
    assert len(trained) == 3
    root = rows[0]
    assert root[:5] == (0, None, 0, "ok", "root") and root[13] == ROOT_TEXT
    for r in trained[1:]:
        assert r[1] is not None and r[2] >= 1 and r[4] == "mutation"
        assert r[5] and json.loads(r[6])["operator"] == r[5] and "args" in json.loads(r[6])
        assert r[13] != ROOT_TEXT and len(r[14]) == 64
    for r in trained:
        assert json.loads(r[7])[0] > 0 and r[8] > 0 and r[9] > 0 and r[12] == 2
    seeds = conn.execute("SELECT arch_id, seed, status, valid_acc, test_acc, job_id FROM arch_seeds ORDER BY arch_id, seed"
                         ).fetchall()
    assert [(a, s) for a, s, *_ in seeds] == [(r[0], s) for r in trained for s in (777, 888)]
    for arch_id, *_ in trained[:1]:
        vals = [v for a, s, st, v, t, j in seeds if a == arch_id]
        mean = conn.execute("SELECT valid_acc FROM archs WHERE arch_id=?", (arch_id,)).fetchone()[0]
        assert mean == pytest.approx(sum(vals) / 2)
    # each seed's job is the runtime's record too
    job_ids = {j for *_, j in seeds}
    assert job_ids == {r[0] for r in conn.execute("SELECT job_id FROM results WHERE status='ok'")}
    assert len(conn.execute("SELECT * FROM search_sessions WHERE stop_reason='trials'").fetchall()) == 1


def test_same_seed_same_proposals_and_tree_different_seed_differs(tmp_path):
    a = run_search(settings(tmp_path / "a", strategy="rea", trials=4, strategy_options={"population": 2,
                                                                                        "sample_size": 2}))
    b = run_search(settings(tmp_path / "b", strategy="rea", trials=4, strategy_options={"population": 2,
                                                                                        "sample_size": 2}))
    c = run_search(settings(tmp_path / "c", strategy="rea", trials=4, seed=1,
                            strategy_options={"population": 2, "sample_size": 2}))
    assert tree_rows(tmp_path / "a") == tree_rows(tmp_path / "b")
    assert a.best["arch_id"] == b.best["arch_id"]
    assert [r[:6] for r in tree_rows(tmp_path / "c")] != [r[:6] for r in tree_rows(tmp_path / "a")]
    assert c.trials == 4


def test_interrupted_search_resumes_with_nothing_redone(tmp_path):
    run = tmp_path / "run"
    cfg = settings(run, trials=4, epochs=2)
    with pytest.raises(KeyboardInterrupt):
        run_search(cfg, observer=Interrupt(arch_id=2, epoch=1))
    conn = db(run)
    before = conn.execute("SELECT arch_id, status FROM archs ORDER BY arch_id").fetchall()
    assert before[:2] == [(0, "ok"), (1, "ok")] and before[2] == (2, "training")
    finished_before = dict(conn.execute("SELECT job_id, finished FROM results").fetchall())
    assert conn.execute("SELECT stop_reason FROM search_sessions").fetchall() == [("interrupted",)]
    conn.close()

    starts = Starts()
    summary = run_search(cfg, observer=starts)
    assert summary.resumed and summary.trials == 4
    conn = db(run)
    # the finished architectures' jobs were not run again (their results are untouched) ...
    for job_id, finished in finished_before.items():
        assert conn.execute("SELECT finished FROM results WHERE job_id=?", (job_id,)).fetchone()[0] == finished
    # ... the interrupted one resumed from its checkpoint after epoch 1, and only new ones started fresh
    job_of = dict(conn.execute("SELECT arch_id, job_id FROM arch_seeds").fetchall())
    assert (job_of[2], 1) in starts.starts
    assert {j for j, _ in starts.starts} == {job_of[2], job_of[3]}
    assert [s for s, in conn.execute("SELECT status FROM archs ORDER BY arch_id")] == ["ok"] * 4
    # an uninterrupted run with the same settings proposes the same tree
    straight = settings(tmp_path / "straight", trials=4, epochs=2)
    run_search(straight)
    assert [r[:9] for r in tree_rows(run)] == [r[:9] for r in tree_rows(tmp_path / "straight")]


def test_rerun_after_the_end_does_nothing_and_more_trials_extend(tmp_path):
    run = tmp_path / "run"
    run_search(settings(run, trials=2))
    starts = Starts()
    again = run_search(settings(run, trials=2), observer=starts)
    assert again.stop.code == "trials" and starts.starts == []
    more = run_search(settings(run, trials=3), observer=starts)
    assert more.trials == 3 and len(starts.starts) == 1


def test_changed_settings_are_refused_unless_forced(tmp_path):
    run = tmp_path / "run"
    run_search(settings(run, trials=1))
    with pytest.raises(ConfigError, match=r"other settings \(strategy: \"walk\" -> \"rea\";.*--force"):
        run_search(settings(run, trials=1, strategy="rea"))
    with pytest.raises(ConfigError, match="seeds"):
        run_search(settings(run, trials=1, seeds=[1, 2]))
    forced = run_search(settings(run, trials=1, strategy="rea"), force=True)
    assert forced.warnings and "strategy" in forced.warnings[0]
    # stop conditions and the executor may change freely; a resume may leave everything out
    resumed = run_search({"run_dir": str(run), "trials": 2, "executor": "local"})
    assert resumed.trials == 2


def test_failures_become_records_and_the_loop_goes_on(tmp_path, scripted):
    run = tmp_path / "run"
    broken = ROOT_TEXT.replace("kernel_size=3,stride=1)\n3:BN", "kernel_size=3,stride=1)\n3:BN\n3->99", 1)
    reformatted = "\n".join(line for line in ROOT_TEXT.splitlines() if not line.startswith("# ")) + "\n"
    texts = [broken, None, reformatted, with_fault(ROOT_TEXT.replace("7:Add", "7:Mul"), "nan"),
             with_fault(ROOT_TEXT.replace("8:ReLU", "8:GELU"), "oom")]
    cfg = settings(run, strategy="scripted", trials=10, builder=FAULTY, epochs=2,
                   strategy_options={"script": script(tmp_path, texts)})
    summary = run_search(cfg)
    assert summary.stop.code == "stalled"  # the script ran out; nothing else to train
    conn = db(run)
    rows = conn.execute("SELECT arch_id, status, duplicate_of, diagnostics, operator FROM archs ORDER BY arch_id"
                        ).fetchall()
    status = {a: s for a, s, *_ in rows}
    assert status == {0: "ok", 1: "invalid", 2: "invalid", 3: "duplicate", 4: "diverged", 5: "failed"}
    diag = json.loads(rows[1][3])
    assert "does not verify" in diag["message"] and diag["diagnostics"][0]["code"].startswith("NAD")
    assert json.loads(rows[2][3])["message"] == "the script has no text here"
    assert rows[3][2] == 0
    kinds = dict(conn.execute("SELECT arch_id, error_kind FROM arch_seeds").fetchall())
    assert kinds[4] == "diverged" and kinds[5] == "oom"
    assert "out of memory" in json.loads(rows[5][3])[0]["error"]


def test_over_budget_candidates_are_recorded_not_trained(tmp_path, scripted):
    run = tmp_path / "run"
    wide = ROOT_TEXT.replace("5:Conv2d(out_channels=C,kernel_size=3,stride=1)\n6:BN",
                             "5:Conv2d(out_channels=4096,kernel_size=3,stride=1)\n6:Conv2d(out_channels=C,"
                             "kernel_size=1,stride=1)", 1)
    cfg = settings(run, strategy="scripted", trials=5, strategy_options={"script": script(tmp_path, [wide])})
    run_search(cfg)
    conn = db(run)
    (status, diagnostics, params) = conn.execute("SELECT status, diagnostics, params FROM archs WHERE arch_id=1"
                                                 ).fetchone()
    assert status == "over-budget" and params is None
    assert "no width fits the budget" in json.loads(diagnostics)["message"]
    assert conn.execute("SELECT COUNT(*) FROM arch_seeds WHERE arch_id=1").fetchone()[0] == 0


def test_dollar_cap_stops_cleanly_and_a_higher_cap_resumes(tmp_path, scripted):
    run = tmp_path / "run"
    texts = [ROOT_TEXT.replace("8:ReLU", "8:GELU"), ROOT_TEXT.replace("7:Add", "7:Mul"),
             ROOT_TEXT.replace("4:ReLU", "4:GELU")]
    cfg = settings(run, strategy="scripted", trials=10, max_cost=0.25,
                   strategy_options={"script": script(tmp_path, texts), "cost": 0.2})
    summary = run_search(cfg)
    assert summary.stop.code == "cost-limit" and "cost cap reached: $0.4 spent of the $0.25 cap; raise the cap" in summary.stop.message
    conn = db(run)
    assert conn.execute("SELECT SUM(cost_usd), SUM(tokens_in), SUM(tokens_out) FROM archs").fetchone() == \
        pytest.approx((0.4, 20, 10))
    assert conn.execute("SELECT stop_reason FROM search_sessions").fetchall() == [("cost-limit",)]
    more = run_search({**cfg, "max_cost": 1.0})
    assert more.stop.code == "stalled" and more.trials == 4


def test_prescreen_trains_the_best_of_k_and_records_the_others(tmp_path):
    run = tmp_path / "run"
    summary = run_search(settings(run, trials=2, prescreen=3, proxy="synflow"))
    assert summary.trials == 2
    conn = db(run)
    rows = conn.execute("SELECT arch_id, status, prescreen FROM archs WHERE arch_id > 0 ORDER BY arch_id").fetchall()
    assert [s for _, s, _ in rows].count("training") + [s for _, s, _ in rows].count("ok") == 1
    assert [s for _, s, _ in rows].count("screened-out") == 2
    screens = {a: json.loads(p) for a, _, p in rows}
    best = max(screens, key=lambda a: screens[a]["score"])
    assert dict((a, s) for a, s, _ in rows)[best] == "ok" and screens[best]["rank"] == 1
    assert all(p["proxy"] == "synflow" and sorted(p["round"]) == sorted(screens) for p in screens.values())


def test_time_limit_starts_no_new_trial(tmp_path):
    summary = run_search(settings(tmp_path / "run", trials=50, time_limit=0.001))
    assert summary.stop.code == "time-limit"
    assert summary.trials == 1  # the root was already on its way


def test_invalid_root_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.nad"
    # A base block that halves the resolution: no skeleton can stack it.
    bad.write_text("##A##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3,stride=2)\n0->2\n2->1\n")
    with pytest.raises(ConfigError, match="root architecture .* is not a valid architecture"):
        run_search(settings(tmp_path / "run", root=str(bad)))


class StoppingStrategy(ScriptedStrategy):
    """Raises StopSearch (as the LLM layer does when its endpoint is down) at its second proposal,
    the first time only (a marker file remembers)."""

    name = "stopping"

    def propose(self, parent, rng):
        marker = Path(self.settings["script"]).with_suffix(".stopped")
        if self._index == 1 and not marker.exists():
            marker.write_text("stopped once\n")
            raise StopSearch("the endpoint is down", code="llm-stopped")
        return super().propose(parent, rng)


def test_a_strategy_can_stop_the_search_cleanly_and_resumably(tmp_path, monkeypatch):
    monkeypatch.setitem(STRATEGIES, "stopping", StoppingStrategy)
    run = tmp_path / "run"
    texts = [ROOT_TEXT.replace("8:ReLU", "8:GELU"), ROOT_TEXT.replace("7:Add", "7:Mul")]
    cfg = settings(run, strategy="stopping", trials=10, strategy_options={"script": script(tmp_path, texts)})
    first = run_search(cfg)
    assert (first.stop.code, first.stop.message, first.trials) == ("llm-stopped", "the endpoint is down", 2)
    conn = db(run)
    assert conn.execute("SELECT stop_reason FROM search_sessions").fetchall() == [("llm-stopped",)]
    second = run_search(cfg)
    assert second.stop.code == "stalled" and second.trials == 3


def test_live_view_draws_only_on_a_terminal(tmp_path):
    import io

    from nader.search.progress import LiveProgress

    plain_stream = io.StringIO()  # off a terminal: no live view, one plain line per finished trial
    plain = LiveProgress(stream=plain_stream)
    run_search(settings(tmp_path / "a", trials=2), observer=plain)
    plain.close()
    lines = plain_stream.getvalue().splitlines()
    assert plain.enabled is False and "\x1b" not in plain_stream.getvalue()
    assert [line.split()[:4] for line in lines] == [["trial", "done=1/2", "id=0", "status=ok"],
                                                    ["trial", "done=2/2", "id=1", "status=ok"]]
    off_stream = io.StringIO()
    off = LiveProgress(stream=off_stream, mode="off")
    run_search(settings(tmp_path / "off", trials=2), observer=off)
    off.close()
    assert off_stream.getvalue() == ""

    class Frames(LiveProgress):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.frames = []

        def event(self, ev):
            super().event(ev)
            if ev.get("type") == "epoch":
                self.frames.append(self.lines())

    shown = Frames(stream=io.StringIO(), enabled=True)
    run_search(settings(tmp_path / "b", trials=2, epochs=2), observer=shown)
    shown.close()
    first = shown.frames[0]
    assert first[0].startswith("walk on digits  trials 1/2  best valid -  rejected 0")
    assert first[1].split() == ["#0", "root", "seed", "777", "epoch", "1/2", "loss", first[1].split()[-1]]
    last = shown.frames[-1]
    assert "trials 2/2  best valid " in last[0] and "(#0)" in last[0] and "epoch 2/2" in last[1]


def test_tree_strategy_with_pareto_selection_runs_end_to_end(tmp_path):
    summary = run_search(settings(tmp_path / "run", strategy="tree", trials=3,
                                  strategy_options={"selection": "pareto"}))
    assert summary.trials == 3 and summary.stop.code == "trials"
    conn = db(tmp_path / "run")
    parents = [p for p, in conn.execute("SELECT parent_id FROM archs WHERE status='ok' AND arch_id > 0")]
    ok = {a for a, in conn.execute("SELECT arch_id FROM archs WHERE status='ok'")}
    assert parents and set(parents) <= ok  # a policy only picks trained parents


def test_any_evaluator_plugs_in_and_rea_evolves_from_its_population(tmp_path):
    from search_helpers import TableEvaluator

    table = TableEvaluator()
    summary = run_search(settings(tmp_path / "run", strategy="rea", trials=40,
                                  strategy_options={"population": 6, "sample_size": 3}), evaluator=table)
    assert summary.trials == 40 and table.closed and len(table.submitted) == 40
    conn = db(tmp_path / "run")
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0  # nothing trained
    rows = conn.execute("SELECT arch_id, parent_id, valid_acc, created, finished FROM archs WHERE status='ok'"
                        ).fetchall()
    acc = {a: v for a, _, v, _, _ in rows}
    evolved = 0
    for arch_id, parent, _, created, _ in rows:
        # REA's population when this architecture was proposed: the last 6 evaluated before it
        population = [a for a, *_, f in sorted(rows, key=lambda r: (r[4], r[0])) if f < created][-6:]
        if len(population) < 6 or parent is None:
            continue
        evolved += 1
        assert parent in population  # age-based: only the 6 most recent can be parents
        ranked = sorted(population, key=lambda a: -acc[a])
        assert ranked.index(parent) <= 3  # the best of a sample of 3 out of 6 ranks 4th at worst
    assert evolved >= 25
    assert summary.best["valid_acc"] == max(acc.values())
