# The README's commands. Each target sets up what it needs on a fresh Debian machine.
PYTHON ?= python3
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 180
export PREFECT_UI_ENABLED ?= false
export DO_NOT_TRACK ?= 1
STAMP := .make/deps.stamp

.PHONY: run osworld-sample osworld-apps-sample test test-apps suite-check lint bench images images-apps docker ocr novnc postgres criu deps reap clean

run: deps docker images  ## collect datasets/smoke.yaml with the Prefect flow on the embedded defaults, print the report
	$(PYTHON) -m flows.collect datasets/smoke.yaml

osworld-sample: deps docker images  ## write the sample OSWorld-format task files, collect datasets/osworld-sample.yaml with the flow
	$(PYTHON) -m osgym tasks sample data/osworld-sample-tasks
	$(PYTHON) -m flows.collect datasets/osworld-sample.yaml

osworld-apps-sample: deps docker images-apps  ## write the apps-tier OSWorld-format tasks and their assets into a local asset cache, collect datasets/osworld-apps-sample.yaml
	$(PYTHON) -m osgym tasks sample data/osworld-apps-sample-tasks --tier apps --cache data/asset-cache
	OSGYM_ASSET_CACHE=data/asset-cache $(PYTHON) -m flows.collect datasets/osworld-apps-sample.yaml

test: deps docker images images-apps ocr novnc postgres criu lint  ## ruff and mypy, then the whole pytest suite, both tiers, on two workers (tests/conftest.py groups them)
	$(PYTHON) -m pytest -n 2 --dist loadgroup

test-apps: deps docker images-apps  ## only the apps tier's tests (each app opens clean, its routes, apps-smoke)
	$(PYTHON) -m pytest tests/apps tests/osworld_client

suite-check: deps docker images-apps  ## every apps-tier template on 3 seeds, quiet and under stress-ng --cpu 4: oracle 1.0, noop 0.0; writes docs/suite-check.md (run on a quiet machine); a failed episode's steps go to suite-check-failures/
	bash scripts/ensure-stress-ng.sh
	$(PYTHON) scripts/suite_check.py --out docs/suite-check.md --seeds 3 --passes quiet,stress --evidence suite-check-failures

lint: deps  ## ruff, then mypy --strict over the package (pyproject.toml [tool.mypy])
	$(PYTHON) -m ruff check osgym flows tasks tests bench
	$(PYTHON) -m mypy

bench: deps docker images  ## every benchmark in turn (run on a quiet machine); copy figures into BENCHMARKS.md
	$(PYTHON) bench/bench_step_latency.py --steps 200
	$(PYTHON) bench/bench_pool.py cold --n 20
	$(PYTHON) bench/bench_pool.py rate --n 24 --concurrency 8
	$(PYTHON) bench/bench_pool.py reset
	$(PYTHON) bench/bench_pool.py active --levels 20,40,80
	$(PYTHON) bench/bench_store_memory.py
	$(PYTHON) bench/bench_sft_export.py --data /tmp/osgym-bench-sft
	$(PYTHON) bench/bench_collect.py --episodes 2000 --replicas 6
	$(PYTHON) bench/bench_serve.py overhead --steps 200
	$(PYTHON) bench/bench_serve.py load --clients 32 --replicas 8 --duration 300

images: deps docker  ## build osgym/base (debootstrap) and osgym/desktop, unless up to date
	$(PYTHON) -m osgym images build

images-apps: deps docker  ## build osgym/apps (XFCE, the applications, VS Code; see replica_images/README.md), unless up to date
	bash scripts/ensure-npm.sh
	$(PYTHON) -m osgym images build --tier apps

docker:  ## make sure a Docker daemon answers (installs docker.io on Debian as root)
	bash scripts/ensure-docker.sh

novnc:  ## noVNC for the live view of osgym serve (installs Debian's novnc as root)
	bash scripts/ensure-novnc.sh

postgres:  ## PostgreSQL's server for the production topology and its tests (installs Debian's postgresql as root; starts no cluster)
	bash scripts/ensure-postgres.sh

criu:  ## CRIU 4.2 under /opt/osgym/criu for reset by restore (builds Debian unstable's source with bookworm's build dependencies, as root)
	bash scripts/ensure-criu.sh

ocr:  ## Tesseract OCR with English data for compare_image_text (installs Debian's tesseract-ocr as root)
	bash scripts/ensure-tesseract.sh

deps: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m pip install -q -e '.[dev]'
	@mkdir -p .make && touch $(STAMP)

reap: deps docker  ## remove replicas left behind by interrupted runs (osgym-labelled only)
	$(PYTHON) -m osgym pool reap

clean:
	rm -rf .make .pytest_cache data
