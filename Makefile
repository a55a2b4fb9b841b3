# Two commands for a new machine: `make run` (the Queue on http://127.0.0.1:7071, Azurite
# started for you) and `make test`. Everything they need is installed into the project.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
AZURITE := .tools/node_modules/.bin/azurite
AZURITE_VERSION := 3.35.0
PORT ?= 7071
# The browser view's graph layout library, bundled from npm at build time (no CDN at run time).
DAGRE_VERSION := 3.1.3
UI_ASSET := shared/ui/static/vendor/dagre.min.js

# `taskq` and `taskq-worker` as commands (.venv/bin/, this checkout's code), usable from any folder.
SCRIPTS := $(VENV)/bin/taskq

.PHONY: run services test bench clean worker ui scripts

# make run THROTTLE=100: storage throttled as Azure throttles, its targets divided by 100 (docs/throttling.md)
run: $(VENV)/.installed $(AZURITE) $(UI_ASSET) local.settings.json $(SCRIPTS)
	$(PY) -m devhost --port $(PORT) $(if $(THROTTLE),--throttle $(THROTTLE))

# Azurite and RabbitMQ alone, for an app served by Core Tools (`func start`): docs/functions-core-tools.md
services: $(VENV)/.installed $(AZURITE)
	$(PY) -m devhost --services-only

test: $(VENV)/.installed $(AZURITE) $(UI_ASSET)
	$(PY) -m pytest $(PYTEST_ARGS)

# A worker running generic-worker payloads from one task queue of the local host (or of
# TASKCLUSTER_ROOT_URL): make worker QUEUE=proj/linux [WORKER_ARGS="--capacity 4"]
worker: $(VENV)/.installed
	@test -n "$(QUEUE)" || { echo "usage: make worker QUEUE=<taskQueueId>" >&2; exit 2; }
	$(PY) -m taskq_worker --queue $(QUEUE) $(WORKER_ARGS)

bench: $(VENV)/.installed $(AZURITE)
	$(PY) -m bench.lifecycle
	$(PY) -m bench.sequential

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@echo "==> creating $(VENV) and installing Python packages"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

$(AZURITE):
	@echo "==> installing Azurite $(AZURITE_VERSION) into .tools/"
	npm install --prefix .tools --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)

scripts: $(SCRIPTS)

$(SCRIPTS): $(VENV)/.installed pyproject.toml
	@echo "==> installing the taskq and taskq-worker commands into $(VENV)/bin/ (editable: this checkout)"
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .

ui: $(UI_ASSET)

$(UI_ASSET):
	@echo "==> bundling @dagrejs/dagre $(DAGRE_VERSION) into shared/ui/static/vendor/"
	npm install --prefix .tools --no-audit --no-fund --loglevel=error @dagrejs/dagre@$(DAGRE_VERSION)
	mkdir -p $(dir $@)
	cp .tools/node_modules/@dagrejs/dagre/dist/dagre.min.js $@
	cp .tools/node_modules/@dagrejs/dagre/LICENSE $(dir $@)dagre.LICENSE.txt

local.settings.json:
	cp local.settings.sample.json local.settings.json

clean:
	rm -rf $(VENV) .tools .azurite .pytest_cache shared/ui/static/vendor dist *.egg-info
