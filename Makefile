# The quick start is two commands: `make demo` and `make test`.
# Both create .venv on first use and reinstall only when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check lint typecheck bench models completions clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

# A session with the built-in demo agent: the interactive prompt on a terminal (over
# ACP v1, the stable protocol, so its `form` keyword can ask for input), a one-shot prompt
# when there is none (CI, pipes).
demo: $(STAMP)
	@if [ -t 0 ] && [ -t 1 ]; then \
		$(BIN)/acpcli new --agent demo --protocol 1; \
	else \
		$(BIN)/acpcli prompt --agent demo --permissions allow "Show me what a session looks like"; \
	fi

# The one test command (CI runs it too): lint, type check, then the whole suite, spread over
# the machine's cores (pytest-xdist; `.venv/bin/python -m pytest -q` runs it in one process).
test: check
	$(BIN)/python -m pytest -q -n auto

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check acpcli tests bench tools

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# Regenerate the protocol models from the upstream schemas (needs the dev extra):
# ACPCLI_SPEC_DIR names their folder (the upstream ACP spec, outside the repository).
models: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,dev]'
	$(BIN)/python tools/gen_models.py

# Regenerate completions/acpcli.{bash,zsh,fish} from the program.
completions: $(STAMP)
	$(BIN)/python tools/gen_completions.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
