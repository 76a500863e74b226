"""The search loop: choose a parent, propose, check, deduplicate, fit, train, record, repeat.

Whenever the evaluator has a free worker, the loop asks the strategy for a parent, has it
propose a candidate (K of them with prescreening), runs the checks (`checks.py`) and records
every candidate in the tree, valid or not, one transaction each. A valid one is sent to the
evaluator; each seed's result is committed with its architecture's record as it arrives and the
strategy is told when an architecture is complete. Nothing is held only in memory: the tree in
the store is the state, and a new loop on the same store carries on from it (`start`).

Stop conditions, checked before each proposal (whichever comes first): the number of trials
(architectures sent to training, the root included), the time limit (no new trial starts
after it; running ones finish), the dollar and token caps (LLM strategies; see
`SearchStore.spent`), any extra check given by the caller, a strategy that keeps producing
no valid architecture (`--max-invalid` invalid proposals in a row, counted from the tree so a
resume counts on: a model that cannot write the language would otherwise spend hours of calls)
or rejected candidates of any kind (in this session), and a strategy that raises StopSearch or
lets through an exception that says it is a clean stop (the LLM client's caps, its endpoint
down: `strategies.base.stop_code`).
Ctrl-C stops at once: running trials keep their checkpoints and the next run resumes them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from nader.agents.llm.accounting import dollars as format_dollars
from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info
from nader.runtime.errors import ConfigError
from nader.runtime.faults import INTERRUPTED, InfrastructureError
from nader.runtime.integrity import StoreError

from .checks import Checked, Checker
from .config import SearchConfig
from .evaluator import Evaluator, SeedOutcome, Trial
from .fidelity import scheduler_of
from .objectives import of_config
from .spaces.space import get_space
from .store import SearchStore
from .candidate import Candidate
from .strategies.base import SearchContext, StopSearch, Strategy, stop_code
from .tree import FINAL, PENDING, TreeNode, Tree
from .warm_start import Proxies

ROUND_TRIES = 4  # proposals per wanted candidate before the strategy is asked for a parent again
MAX_REJECTS_IN_ROW = 100  # rejected proposals of any kind in a row (this session) before the loop gives up
MAX_ATTEMPTS = 2  # evaluations of an architecture that crashed (killed, out of memory, timeout)
RETRYABLE = frozenset({"killed", "oom", "timeout"})
RUN_AGAIN = "run the same command again to resume"
RAISE_THE_CAP = "raise the cap (--llm-max-cost, --llm-max-tokens) and run the same command again to resume"
ADVICE = {"raise-cap": RAISE_THE_CAP, "run-again": RUN_AGAIN}  # a clean stop's `stop_advice` -> what to do


@dataclass(frozen=True)
class Stop:
    code: str  # trials | time-limit | cost-limit | token-limit | invalid | rejects | stalled | interrupted | <extra>
    message: str


class Observer:
    """Hooks for progress displays (all optional)."""

    def started(self, loop: "SearchLoop") -> None: ...
    def recorded(self, node: TreeNode) -> None: ...  # a rejected or screened-out candidate
    def submitted(self, node: TreeNode) -> None: ...
    def seed_done(self, outcome: SeedOutcome) -> None: ...
    def finished(self, node: TreeNode) -> None: ...
    def event(self, event: dict) -> None: ...  # the trainer's start/epoch events


StopCheck = Callable[["SearchLoop"], Optional[Stop]]


def clean_stop(exc: BaseException) -> Optional[Stop]:
    """The Stop an exception stands for, if it is a clean stop: StopSearch, or one that carries
    the stop protocol (`strategies.base.stop_code`): the LLM client's dollar or token cap reached,
    its endpoint down, a replay without the answer, or one call that failed after its retries
    where a strategy did not absorb it. Every one resumes."""
    if isinstance(exc, StopSearch):
        return Stop(exc.code, str(exc))
    stop = stop_code(exc)
    if stop is None:
        return None
    code, reason, advice = stop
    return Stop(code, f"{reason}; {ADVICE.get(advice, RUN_AGAIN)}")


def search_context(config: SearchConfig, store: Optional[SearchStore]) -> SearchContext:
    """The context a strategy is bound to: the configured network, depths, budget and space, the
    run directory, the LLM caps, and the loop's usage callback (usage goes into `store`)."""
    caps = {"max_cost_usd": config.max_cost, "max_total_tokens": config.max_tokens}

    def add_usage(arch_id: int, tokens_in: int, tokens_out: int, cost_usd: float) -> None:
        if store is not None and (tokens_in or tokens_out or cost_usd):
            store.add_usage(arch_id, tokens_in, tokens_out, cost_usd)

    return SearchContext(run_dir=Path(config.run_dir) if config.run_dir else None, skeleton=config.skeleton,
                         dataset=config.dataset,
                         depths=tuple(resolve_depths(skeleton_info(config.skeleton), config.depths)),
                         budget=config.budget(), space=get_space(config.space),
                         objectives=of_config(config.objectives),
                         llm_caps={k: v for k, v in caps.items() if v is not None}, add_usage=add_usage,
                         repair=config.effective_repair(), proxies=Proxies(config, store))


class SearchLoop:
    def __init__(self, config: SearchConfig, store: SearchStore, evaluator: Evaluator, strategy: Strategy, *,
                 observer: Optional[Observer] = None, stop_checks: Sequence[StopCheck] = (),
                 session: Optional[int] = None, prescreener=None, clock: Callable[[], float] = time.monotonic,
                 context: Optional[SearchContext] = None):
        """`context` is the one the strategy was bound to (`run_search` binds it); without one the
        loop makes it (`search_context`) and binds the strategy itself."""
        self.config, self.store, self.evaluator, self.strategy = config, store, evaluator, strategy
        self.observer = observer or Observer()
        self.stop_checks = list(stop_checks)
        self.session = session
        self.clock = clock
        self.seeds = config.resolved_seeds()
        if context is None:
            context = search_context(config, store)
            strategy.bind(context)
        self.context = context
        self.depths = list(context.depths)
        self.space = context.space
        self.checker = Checker(config.skeleton, config.dataset, self.depths, config.budget(),
                               space=self.space if self.space.name != "language" else None)
        self.prescreener = prescreener
        self.proxies = context.proxies  # the run's proxy: the warm start's pool (warm_start.py)
        self.fidelity = scheduler_of(config, store)  # None: every trial at the full budget
        self.tree = Tree()
        self.rejects_in_row = 0
        self.stop: Optional[Stop] = None
        self.t0 = clock()

    # ------------------------------------------------------------------ public
    def run(self) -> Stop:
        self.start()
        self.observer.started(self)
        try:
            while True:
                if self.stop is None:
                    self.fill()
                if self.evaluator.pending() == 0:
                    if self.stop is not None and self.stop.code == "trials" and self.fidelity is not None \
                            and self._promote(self.fidelity.close()):
                        continue  # the last bracket's promotions train before the search ends
                    if self.stop is None:
                        self.stop = Stop("stalled", "no architecture to modify: the strategy waits for a trained "
                                                    "architecture and none is training")
                    break
                for outcome in self.evaluator.wait():
                    self.record(outcome)
        except KeyboardInterrupt:
            self.stop = Stop("interrupted", "interrupted; run the same command again to resume")
            raise
        return self.stop

    def start(self) -> None:
        """Load the tree; add the root to a new run; retry crashed architectures; replay finished
        ones to the strategy; send every pending one to the evaluator."""
        self.tree = Tree(self.store.nodes())
        if self.tree.root is None:
            self._add_root()
        for node in list(self.tree):
            if node.status == "failed" and node.attempts < MAX_ATTEMPTS:
                seeds = self.store.seeds_done(node.arch_id)
                failed = [s for s, (st, kind) in seeds.items() if st == "failed"]
                if failed and all(seeds[s][1] in RETRYABLE for s in failed):
                    self.store.retry(node.arch_id, failed)
        if self.fidelity is not None:
            self.fidelity.catch_up()
        self.tree = Tree(self.store.nodes())
        if self.proxies is not None:
            self.proxies.prepare(self)  # the warm start's pool, scored before the first query
        finals = sorted((n for n in self.tree if n.status in FINAL), key=lambda n: (n.finished or 0, n.arch_id))
        for node in self.fidelity.history(self.tree) if self.fidelity is not None else finals:
            self.strategy.tell(told(node), self.rng("tell", node.arch_id))
        for node in self.tree:
            if node.status in PENDING:
                self._submit(node)

    def fill(self) -> None:
        """Propose until every worker is busy, a stop condition holds, or the strategy waits."""
        while self.stop is None and self.evaluator.idle() > 0:
            self.stop = self.limit()
            if self.stop is not None:
                return
            try:
                seed = self._warm_seed()
                if seed is not None:  # a strategy that does not draw from the pool starts from its best
                    node = self.propose_round(self.tree.root, make=_once(seed.candidate(self.proxies.spec)))
                else:
                    parent = self.strategy.ask(self.tree, self.rng("ask", self.tree.next_id))
                    if parent is None:
                        return
                    node = self.propose_round(parent)
            except Exception as exc:
                self.stop = clean_stop(exc)
                if self.stop is None:
                    raise
                return
            if node is not None:
                self._submit(node)

    def _warm_seed(self):
        """The warm start's best architecture, for a strategy that does not draw from the pool
        (`Strategy.draws_pool`), until one warm-start architecture is in the tree; else None."""
        if self.proxies is None or not self.proxies.pool or getattr(self.strategy, "draws_pool", False):
            return None
        if any("warm_start" in n.change for n in self.tree):
            return None
        return self.proxies.pool[0]

    def limit(self) -> Optional[Stop]:
        c = self.config
        if self.tree.trials() >= c.trials:
            return Stop("trials", f"reached {c.trials} trials")
        if c.time_limit is not None and self.clock() - self.t0 >= c.time_limit:
            return Stop("time-limit", f"reached the time limit of {c.time_limit:g} s")
        if c.sim_time_limit is not None:  # a tabular benchmark's simulated training time, all sessions
            used = self.store.seconds_used()
            if used >= c.sim_time_limit:
                return Stop("sim-time-limit", f"used {used:,.0f} s of simulated training time "
                                              f"(budget {c.sim_time_limit:,.0f} s)")
        if c.max_cost is not None or c.max_tokens is not None:
            tokens, dollars = self.store.spent()
            # The client refuses any call once the spend reaches a cap; it also refuses calls
            # whose worst case could pass it, which only the call itself knows.
            if c.max_cost is not None and dollars >= c.max_cost:
                return Stop("cost-limit", f"cost cap reached: {format_dollars(dollars)} spent of the "
                                          f"{format_dollars(c.max_cost)} cap; {RAISE_THE_CAP}")
            if c.max_tokens is not None and tokens >= c.max_tokens:
                return Stop("token-limit", f"token cap reached: {tokens:,} tokens spent of the {c.max_tokens:,} cap; "
                                           f"{RAISE_THE_CAP}")
        invalid = self.in_row({"invalid"}, c.max_invalid)
        if invalid >= c.max_invalid:
            return Stop("invalid", f"the last {invalid} proposals were all invalid: the strategy produced no valid "
                                   f"architecture (see their diagnostics); raise --max-invalid to let it try longer")
        if self.rejects_in_row >= MAX_REJECTS_IN_ROW:
            return Stop("rejects", f"the last {self.rejects_in_row} proposals were all invalid, duplicates or "
                                   f"over budget")
        for check in self.stop_checks:
            stop = check(self)
            if stop is not None:
                return stop
        return None

    def in_row(self, statuses, most: int) -> int:
        """How many of the tree's last proposals (by id, up to `most`) have one of `statuses`: read
        from the tree, so a resumed run counts the ones its previous session ended with."""
        last = self.tree.next_id - 1
        for count in range(most):
            node = self.tree.nodes.get(last - count)
            if node is None or node.status not in statuses:
                return count
        return most

    def rng(self, purpose: str, arch_id: int) -> random.Random:
        """The random source of one decision: a function of the run's seed and the architecture id
        it is for, so the same seed makes the same decisions, before and after a resume."""
        return random.Random(f"nader-search/{self.config.seed}/{purpose}/{arch_id}")

    # ------------------------------------------------------------------ proposing
    def propose_round(self, parent: TreeNode, make=None) -> Optional[TreeNode]:
        """Candidates from `parent` until K are valid (K = 1 without prescreening), at most
        ROUND_TRIES * K of them; every one is recorded; returns the one to train, if any (else
        the loop asks the strategy again). `make(parent, rng)` proposes instead of the strategy."""
        k = max(1, self.config.prescreen)
        propose = make or self.strategy.propose
        valid: List[tuple] = []
        for _ in range(ROUND_TRIES * k):
            if len(valid) >= k:
                break
            arch_id = self.tree.next_id
            try:
                candidate = propose(parent, self.rng("propose", arch_id))
            except Exception as exc:  # a clean stop keeps this round's valid candidates
                self.stop = clean_stop(exc)
                if self.stop is None:
                    raise
                break
            if candidate is None:  # nothing more from this parent for now
                break
            try:
                checked = self.checker.check(candidate.text, self.tree, candidate.error, candidate.arch)
            except Exception as exc:  # noqa: BLE001 - a text the checks raise on is that candidate's failure
                message = f"the candidate could not be checked: {type(exc).__name__}: {str(exc)[:500]}"
                checked = Checked("invalid", diagnostics={"message": message, "diagnostics": []})
            record = self._record(arch_id, parent, candidate, checked)
            node = _node_of(record)
            self.tree.add(node)
            if not checked.ok:
                self.store.insert([record])
                self.rejects_in_row += 1
                self.observer.recorded(node)
                if self._round_over():
                    break
                continue
            self.rejects_in_row = 0
            self.checker.remember(arch_id, checked.arch)
            valid.append((record, node))
            if self._round_over():
                break
        if not valid:
            return None
        chosen = 0
        if len(valid) > 1 and self.prescreener is not None:
            chosen, notes = self.prescreener.choose([(rec["hash"], rec["text"]) for rec, _ in valid])
            for (rec, _node), note in zip(valid, notes):
                rec["prescreen"] = {**note, "round": [r["arch_id"] for r, _ in valid]}
        for i, (rec, node) in enumerate(valid):
            rec["status"] = node.status = "training" if i == chosen else "screened-out"
        self.store.insert([rec for rec, _ in valid])
        for i, (_rec, node) in enumerate(valid):
            if i != chosen:
                self.observer.recorded(node)
        return valid[chosen][1]

    def _round_over(self) -> bool:
        """A stop condition other than the trial count (which this round's candidates are
        already part of) ends a prescreening round early; its best valid candidate still trains."""
        stop = self.limit()
        return stop is not None and stop.code != "trials"

    def _record(self, arch_id: int, parent: Optional[TreeNode], cand: Candidate, checked: Checked) -> dict:
        return {"arch_id": arch_id, "parent_id": parent.arch_id if parent else None,
                "depth": parent.depth + 1 if parent else 0, "text": cand.text, "origin": cand.origin,
                "operator": cand.operator, "change": cand.change or None, "tokens_in": cand.tokens_in,
                "tokens_out": cand.tokens_out, "cost_usd": cand.cost_usd, "session": self.session,
                **checked.columns()}

    def _add_root(self) -> None:
        c = self.config
        checked = self.checker.check(c.root_text, self.tree)
        if not checked.ok:
            msg = (checked.diagnostics or {}).get("message", checked.status)
            what = "does not fit the budget" if checked.status == "over-budget" else "is not a valid architecture"
            raise ConfigError(f"the root architecture {c.root or ''} {what} for the {c.skeleton} skeleton: {msg}")
        record = self._record(0, None, Candidate(c.root_text, origin="root"), checked)
        # --root none: the root is only where the tree hangs; the first trial is the strategy's own
        record["status"] = "training" if c.trains_root() else "untrained"
        self.store.insert([record])
        self.tree.add(_node_of(record))

    # ------------------------------------------------------------------ evaluating
    def _submit(self, node: TreeNode) -> None:
        done = self.store.seeds_done(node.arch_id)
        seeds = [s for s in self.seeds if s not in done]
        if node.status != "training":
            self.store.set_status(node.arch_id, "training")
            node.status = "training"
        if not seeds:  # every seed is recorded: only the aggregate is missing
            finished = self.store.refresh(node.arch_id, len(self.seeds))
            if finished is not None:
                self._finish(finished)
            return
        epochs = self.fidelity.epochs(node) if self.fidelity is not None else None
        self.evaluator.submit(Trial(node.arch_id, node.text, node.widths, seeds, label=f"#{node.arch_id}",
                                    epochs=epochs))
        self.observer.submitted(node)

    def record(self, outcome: SeedOutcome) -> None:
        if outcome.status == INTERRUPTED:  # the machine failed, not the architecture: stop, a resume retries it
            with contextlib.suppress(StoreError):  # a full disk may refuse this too; it stays "training" then
                self.store.set_status(outcome.arch_id, INTERRUPTED, diagnostics=json.dumps(
                    [{"seed": outcome.seed, "status": INTERRUPTED, "error": outcome.error,
                      "error_kind": outcome.error_kind}]))
            raise InfrastructureError(outcome.error or f"arch #{outcome.arch_id} was interrupted by the machine")
        node = self.store.record_seed(
            outcome.arch_id, outcome.seed, status=outcome.status, valid_acc=outcome.valid_acc,
            test_acc=outcome.test_acc, seconds=outcome.seconds, epochs=outcome.epochs, error=outcome.error,
            error_kind=outcome.error_kind, job_id=outcome.job_id,
            result=None if outcome.cached else outcome.result, seeds_total=len(self.seeds),
            objectives=outcome.objectives, user_attrs=outcome.user_attrs)
        self.observer.seed_done(outcome)
        if node is not None:
            self._finish(node)

    def _finish(self, node: TreeNode) -> None:
        self.tree.update(node)
        self.strategy.tell(told(node), self.rng("tell", node.arch_id))
        self.observer.finished(node)
        if self.fidelity is not None:
            self._promote(self.fidelity.finished(node))

    def _promote(self, arch_ids: List[int]) -> int:
        """Send architectures the fidelity scheduler promoted to their next rung."""
        for arch_id in arch_ids:
            node = self.store.node(arch_id)
            self.tree.update(node)
            self._submit(node)
        return len(arch_ids)


def _once(candidate: Candidate):
    """A proposer that gives `candidate` once, then nothing (the round ends)."""
    given = []

    def make(parent, rng):
        if given:
            return None
        given.append(True)
        return candidate
    return make


def told(node: TreeNode) -> TreeNode:
    """What a strategy is told of an evaluated node: a pruned one as a lower rung is told, a result
    (`ok`) at the step it stopped, with its last value."""
    return dataclasses.replace(node, status="ok") if node.status == "pruned" else node


def _node_of(record: dict) -> TreeNode:
    return TreeNode(arch_id=record["arch_id"], parent_id=record["parent_id"], depth=record["depth"],
                status=record["status"], text=record["text"], hash=record["hash"],
                duplicate_of=record["duplicate_of"], origin=record["origin"], operator=record["operator"],
                change=record["change"] or {}, widths=record["widths"], params=record["params"],
                flops=record["flops"])
