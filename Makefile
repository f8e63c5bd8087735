# The README's two commands: `make run` and `make test`. Both set up everything they need.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
FLEET_DIR ?= $(CURDIR)/.fleet

.PHONY: run test test-unit lint typecheck pytest system fleet-up fleet-down demo screenshots bench wheel clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip >/dev/null
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

# bytecode written even where PYTHONDONTWRITEBYTECODE is set: start-up does not compile
run: $(STAMP)
	@$(BIN)/python -m compileall -q rocmtui
	$(BIN)/rocmtui $(ARGS)

# System packages for the real local fleet (docker.io, registry, nginx, buildx ...).
# Needs root; a no-op when everything is present.
system:
	@if [ "$$(id -u)" = 0 ]; then bash .ci/install-system >/dev/null; \
	else echo "not root: skipping system packages (see .ci/install-system)"; fi

lint: $(STAMP)
	$(BIN)/ruff check rocmtui devfleet tests bench
	$(BIN)/ruff format --check rocmtui devfleet tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# The tests that wait run side by side in PYTEST_WORKERS processes (0: all in this one), each
# worker with a fleet of its own; then the few marked `alone` run with nothing beside them.
# Both phases always run (a failure in the first still shows the second's); either fails it.
# A test that failed side by side runs again, alone: four workers on two cores outwait some
# deadlines, so what fails only beside the others is named as such, and what fails alone too
# fails the target.
PYTEST_WORKERS ?= 4
pytest: $(STAMP) system
	@side=0; alone=0; \
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --phase side-by-side $(PYTEST_ARGS) || side=$$?; \
	if [ $$side = 1 ]; then \
	  echo "make pytest: the tests that failed side by side, again with nothing beside them:"; \
	  side=0; $(BIN)/pytest --last-failed --last-failed-no-failures none --phase side-by-side \
	    $(PYTEST_ARGS) || side=$$?; \
	fi; \
	$(BIN)/pytest --phase alone $(PYTEST_ARGS) || alone=$$?; \
	echo "make pytest: side by side exit $$side, alone exit $$alone"; \
	[ $$side = 0 ] && [ $$alone = 0 ]

test: lint typecheck pytest

# the core units only (tests/unit/): no fleet, no system packages, well under a minute
test-unit: $(STAMP)
	$(BIN)/pytest -q tests/unit $(PYTEST_ARGS)

fleet-up: $(STAMP) system
	$(BIN)/python -m devfleet up --dir $(FLEET_DIR) --bake-file $(CURDIR)/bake/demo.hcl

fleet-down: $(STAMP)
	$(BIN)/python -m devfleet down --dir $(FLEET_DIR)

demo: fleet-up
	$(BIN)/rocmtui --config $(FLEET_DIR)/rocmtui.toml

screenshots: $(STAMP) system
	$(BIN)/python -m devfleet screenshots --dir $(FLEET_DIR) --out screenshots

bench: $(STAMP) system
	$(BIN)/python bench/run.py

# The wheel operators install (`pipx install dist/rocmtui-*.whl`); tests/e2e/test_wheel.py builds
# and installs one into a fresh venv in CI.
wheel: $(STAMP)
	$(BIN)/pip wheel -q --no-deps -w dist .
	rm -rf build

clean:
	rm -rf $(VENV) build dist *.egg-info
