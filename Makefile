# Set-up is part of every target: a fresh machine needs only Python 3.11 and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BROWSER_STAMP := $(VENV)/.browser

.PHONY: demo test bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# constraints.txt pins the CPU build of torch; never let pip pick a CUDA one.
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# The report's browser tests use Debian's chromium. Best effort: where it cannot be installed
# (not root, no apt, no network) those tests skip and say so.
$(BROWSER_STAMP): | $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; } \
		|| echo "chromium not installed: the report's browser tests will skip"
	touch $(BROWSER_STAMP)

test: $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info
