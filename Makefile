# The quick start is two commands: `make demo` and `make test`.
# Both create .venv on first use and reinstall only when pyproject.toml changes. `make demo`
# installs what running acpcli needs and nothing else; `make test` adds the test tools.
# Installs are quiet: pip's output goes to .venv/install.log, shown only when it fails.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs
PIP    := $(BIN)/python -m pip install -q --disable-pip-version-check

.PHONY: demo test check lint typecheck bench models completions docs clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(PIP) --upgrade pip > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@$(PIP) -e . >> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@# the checkout on the path as a plain .pth too, so type checkers (mypy, pyright) of a
	@# user's own scripts in this venv find acpcli and its py.typed (they skip import hooks)
	@$(BIN)/python -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'acpcli-checkout.pth').write_text(str(pathlib.Path.cwd()) + '\n')"
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	@$(PIP) -e '.[test]' >> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(TEST_STAMP)

$(DOCS_STAMP): $(STAMP)
	@$(PIP) -e '.[docs]' >> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(DOCS_STAMP)

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
# twice as many workers as the machine has cores (pytest-xdist: most tests wait on agents,
# hosts and pseudo-terminals, not on the CPU; on 2 cores, 4 workers take 11 minutes where 2
# take 16). `.venv/bin/python -m pytest -q` runs it in one process; TEST_WORKERS=N sets it.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * (os.cpu_count() or 1))')
test: $(TEST_STAMP) check
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

check: lint typecheck

lint: $(TEST_STAMP)
	$(BIN)/ruff check acpcli tests bench tools

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

bench: $(TEST_STAMP)
	$(BIN)/python bench/run_all.py

# Regenerate the protocol models from the upstream schemas (needs the dev extra):
# ACPCLI_SPEC_DIR names their folder (the upstream ACP spec, outside the repository).
models: $(TEST_STAMP)
	$(BIN)/python -m pip install -q -e '.[test,dev]'
	$(BIN)/python tools/gen_models.py

# Regenerate completions/acpcli.{bash,zsh,fish} from the program.
completions: $(TEST_STAMP)
	$(BIN)/python tools/gen_completions.py

# The user's guide as a site (site/): the command reference regenerated from the program, then
# mkdocs build --strict (a broken link or a page missing from the navigation fails).
docs: $(DOCS_STAMP)
	$(BIN)/python tools/gen_reference.py
	$(BIN)/mkdocs build --strict --quiet

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache
