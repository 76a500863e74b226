"""Lint: style problems and suspicious-but-valid patterns in blocks (NAD4xx).

`nadc lint FILE...` reports, for blocks written by hand or by agents, what is
valid but probably not meant. Rules live in `rules/`, one module per rule,
each declaring its code with documentation (`nadc explain NAD401`).

What lint reports, and what it leaves to others:

* **Front-end warnings are lint findings.** The parser already warns about
  headers with extra hashes (NAD116), operation aliases such as `Concat`
  (NAD115) and a missing header (NAD111). Lint re-reports those diagnostics
  under their own codes, subject to the same selection and suppression as the
  NAD4xx rules, instead of declaring duplicate NAD4xx rules for them.
  Front-end *errors* are always shown and make lint fail; the rules do not
  run on a file with syntax errors.
* **Structure and shapes belong to `nadc verify`.** A node whose output never
  reaches `output` is NAD206 (an error of the verifier), so lint has no
  unreachable-computation rule. Rules that need shapes can be written with
  `needs_shapes=True`; they receive the verifier's `ShapeResult` in
  `ctx.shapes` when a caller provides it (`lint_parsed(..., analyze=...)`),
  and are skipped otherwise.

Configuration: `[tool.nadc.lint] select/ignore` in the nearest pyproject.toml
(see `config.py`), `--select/--ignore` on the command line, and
`# nadc: ignore[NAD401]` (or `# nadc: ignore`) on the offending line.
"""
from .engine import Finding, LintContext, Rule, all_rules, lint_block, lint_parsed, rule  # noqa: F401
from . import rules  # noqa: F401,E402 - registers every rule (and its code)
