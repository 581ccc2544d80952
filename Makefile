# The Transformer, Built: the two commands of the README, and the pieces they are made of.
#   make book   set up .venv, export the package, build the HTML book into _build/html
#               (English at its root, the Chinese edition in _build/html/zh)
#   make test   set up .venv, then the whole suite: unit tests, strict nbval over every chapter,
#               the export-in-sync check, the book build (-W) and a headless-browser check;
#               then the chapters once more as two other kinds of processor run them (test-other-cpu)
#   make lab    set up .venv, then JupyterLab on the runner editions with the project's kernel (live widgets)
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENDOR := book/_vendor/vendor
VENDOR_STAMP := $(VENDOR)/.fetched
# npm packages served by the built book instead of a CDN (the book works with no internet)
NPM_PKGS := mathjax@3.2.2 requirejs@2.3.8 @jupyter-widgets/html-manager@1.0.15
PYTEST_ARGS ?=

.PHONY: help venv export vendor book translations notebooks lab lint format test test-quick test-other-cpu unit nbval bench table3 execute train clean web-model

help:
	@echo "make book   build the HTML book into _build/html (the Chinese edition into _build/html/zh)"
	@echo "make translations  update the Chinese edition's catalogues (locales/zh_CN) after an English change"
	@echo "make test   run the whole test suite (unit, nbval, export sync, book build, browser),"
	@echo "           then make test-other-cpu: chapters again as a CPU without AVX-512 or bf16, and with plain kernels and 3 threads, runs them;"
	@echo "           it prints its 25 slowest tests"
	@echo "make test-quick  the quick tier (minutes): unit, translation and lint checks, then strict nbval of the chapters"
	@echo "           changed since QUICK_BASE (default HEAD: not yet committed), those out of date, and their readers"
	@echo "make lint   ruff over the package, tools, tests, benchmarks and chapters at the printed width (88);"
	@echo "           make format  formats them (the chapters with nbdev's #| lines kept)"
	@echo "make lab    open the chapters' runner editions in JupyterLab (LAB_ARGS='--no-browser --port=8890' ...);"
	@echo "           both languages: NN.ipynb in English, NN.zh.ipynb in Chinese (EDITIONS=zh_CN: only the Chinese ones)"
	@echo "           LAB_DIR=chapters opens the MyST sources, for editing them"
	@echo "make pdf    the book as a PDF in each language, into _build/pdf"
	@echo "make notebooks  write the runner editions (plain notebooks for Colab, Binder, Jupyter) to _build/notebooks"
	@echo "make execute NB=chapters/01_qkv_attention.ipynb   re-run a chapter in a fresh kernel, then the chapters that read what it writes"
	@echo "make bench  run the benchmarks in benchmarks/"
	@echo "make table3  rerun the paper's Table 3 (chapter 12): the rows missing from results/table3.json (ROW=A-h1: one row)"
	@echo "make web-model  re-export chapter 12b's in-browser model from the book's best recorded run, runs/cpu-30min"
	@echo "           (its record: results/cpu-30min; WEB_RUN=... WEB_RECORD=... another run and where its record goes)"
	@echo "make train  train the cpu preset on Multi30k (minutes; PRESET=cpu-full: the recorded run of chapter 12;"
	@echo "           TRAIN_ARGS=--resume to continue)"

$(STAMP): requirements.txt pyproject.toml book/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e . -e book
	$(PY) -c 'import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()["purelib"], "transformer_book_export.pth").write_text("$(CURDIR)/scripts/export_hooks\n")'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

venv: $(STAMP)

# nbdev writes the package from the chapters; then its own lines (module docstrings, __all__)
# are brought to the chapters' 88 columns (scripts/export_hooks/transformer_book_export.py)
export: $(STAMP)
	$(VENV)/bin/nbdev-export
	$(PY) -m transformer_book_export

$(VENDOR_STAMP):
	@rm -rf $(VENDOR) && mkdir -p $(VENDOR)
	cd $(VENDOR) && npm pack --silent $(NPM_PKGS) >/dev/null \
	  && mkdir -p mathjax requirejs html-manager \
	  && tar -xzf mathjax-*.tgz -C mathjax --strip-components=1 package/es5/tex-chtml.js \
	       package/es5/output/chtml package/es5/input/tex package/es5/ui package/es5/a11y \
	  && tar -xzf requirejs-*.tgz -C requirejs --strip-components=1 package/require.js \
	  && tar -xzf jupyter-widgets-html-manager-*.tgz -C html-manager --strip-components=1 package/dist \
	  && rm -f *.tgz html-manager/dist/embed.js* html-manager/dist/*.map
	@touch $@

vendor: $(VENDOR_STAMP)

# Chapter 12b's in-browser translator: onnxruntime-web (WebAssembly build only) and the BPE
# tokenizer in JavaScript, from the npm registry, served by the book from /translator-vendor/.
WEB_VENDOR := book/_vendor/translator-vendor
WEB_VENDOR_STAMP := $(WEB_VENDOR)/.fetched
WEB_NPM_PKGS := onnxruntime-web@1.30.0 @huggingface/tokenizers@0.2.0
$(WEB_VENDOR_STAMP):
	@rm -rf $(WEB_VENDOR) && mkdir -p $(WEB_VENDOR)
	cd $(WEB_VENDOR) && npm pack --silent $(WEB_NPM_PKGS) >/dev/null \
	  && mkdir -p ort tokenizers \
	  && tar -xzf onnxruntime-web-*.tgz -C ort --strip-components=2 package/dist/ort.wasm.bundle.min.mjs \
	       package/dist/ort-wasm-simd-threaded.wasm package/dist/ort-wasm-simd-threaded.mjs \
	  && tar -xzf huggingface-tokenizers-*.tgz -C tokenizers --strip-components=1 package/LICENSE \
	  && tar -xzf huggingface-tokenizers-*.tgz -C tokenizers --strip-components=2 package/dist/tokenizers.min.mjs \
	  && rm -f *.tgz
	@touch $@
vendor: $(WEB_VENDOR_STAMP)

# axe-core, the accessibility checker that tests/test_web.py injects into every page of both
# editions: a tool of the tests, kept out of the site (in _build, not book/_vendor).
TEST_VENDOR := _build/test-vendor
TEST_VENDOR_STAMP := $(TEST_VENDOR)/.fetched
TEST_NPM_PKGS := axe-core@4.14.1
$(TEST_VENDOR_STAMP):
	@rm -rf $(TEST_VENDOR) && mkdir -p $(TEST_VENDOR)/axe-core
	cd $(TEST_VENDOR) && npm pack --silent $(TEST_NPM_PKGS) >/dev/null \
	  && tar -xzf axe-core-*.tgz -C axe-core --strip-components=1 package/axe.min.js package/LICENSE \
	  && rm -f *.tgz
	@touch $@
vendor: $(TEST_VENDOR_STAMP)

# The in-browser model (committed under book/_static/translator/model): re-export it from the
# book's best recorded run, in runs/cpu-30min (python scripts/record_run.py --preset cpu-30min),
# then commit it; the run's record in results/cpu-30min stays as record_run.py wrote it
# (WEB_RUN and WEB_RECORD: another run, whose record the script writes).
WEB_RUN ?= runs/cpu-30min
WEB_RECORD ?= results/cpu-30min
web-model: $(STAMP)
	$(PY) scripts/export_onnx.py --run $(WEB_RUN) --record $(WEB_RECORD) --out book/_static/translator/model

book: export vendor
	$(PY) scripts/build_book.py

# The book as a PDF in each language, _build/pdf/the-transformer-built.pdf and -zh.pdf: each edition
# built as one HTML page and printed by the system Chromium (book/booktools/pdf.py, CONTRIBUTING.md)
.PHONY: pdf
pdf: export vendor
	$(PY) scripts/make_pdf.py

# The Chinese edition's message catalogues (locales/zh_CN/TRANSLATING.md): extract the English
# messages (into _build/i18n, apart from the HTML build's doctrees), then update every .po: new
# messages arrive empty, changed ones keep their old translation marked fuzzy; and the catalogue of
# glued values that are words (locales/zh_CN/glued_values.po), from the chapters' stored outputs.
translations: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder custom --custom-builder gettext --path-output _build/i18n -q
	$(VENV)/bin/sphinx-intl update -p _build/i18n/_build/gettext -l zh_CN -d locales
	$(PY) scripts/check_translations.py --update-glued
	$(PY) scripts/check_translations.py | grep "translated, " || true

# The runner editions: every chapter as a plain notebook (glued values written in, roles as links,
# hints and solutions in <details>) into _build/notebooks/chapters/, beside links to book/,
# results/ ... so they read what the chapters read. Rewrites only what changed.
# Both languages by default: chapters/NN.ipynb and chapters/NN.zh.ipynb; EDITIONS=zh_CN (or en) for one.
EDITIONS ?=
notebooks: $(STAMP)
	$(PY) scripts/make_notebooks.py --out _build/notebooks $(foreach l,$(EDITIONS),--language $(l))

# JupyterLab, with jupyterlab-myst rendering MyST in markdown cells. JUPYTER_PATH puts .venv's
# kernel `python3` (and the widgets extension, jupyterlab_widgets) ahead of any the user has
# installed elsewhere. Readers get the runner editions; whoever edits chapters opens the
# sources: `make lab LAB_DIR=chapters`.
LAB_ARGS ?=
LAB_DIR ?= _build/notebooks/chapters
lab: export $(if $(filter _build/notebooks%,$(LAB_DIR)),notebooks)
	@echo "JupyterLab on $(LAB_DIR) with the kernel of $(CURDIR)/$(VENV); open the URL below (Ctrl-C twice stops it)"
	JUPYTER_PATH="$(CURDIR)/$(VENV)/share/jupyter$${JUPYTER_PATH:+:$$JUPYTER_PATH}" \
	  $(VENV)/bin/jupyter-lab --ServerApp.root_dir=$(LAB_DIR) \
	  --MultiKernelManager.default_kernel_name=python3 $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

NBVAL_ARGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	--nbval-cell-timeout=900

# The suite runs in WORKERS processes (pytest-xdist): each unit of work (a test file, a chapter, the
# tests of the built book) runs whole on one of them (conftest.py). WORKERS=0: one process.
# Then the training chapters, in order, alone: beside another process, 11b's two-thread training
# cell ran past nbval's 900-s cell limit (200 s alone), so they get the machine to themselves.
WORKERS ?= 2
TRAINING_NB := chapters/11a_data.ipynb chapters/11b_training.ipynb chapters/11c_train_cli.ipynb \
	chapters/12_results_and_attention.ipynb chapters/12b_in_the_browser.ipynb
# Ruff at the printed code column (pyproject.toml: 88): `ruff check` over everything, the
# chapters' code cells included; `ruff format --check` over the Python files (the chapters
# are formatted by `make format`, which keeps nbdev's `#|` lines as they are).
RUFF = $(VENV)/bin/ruff
NOTEBOOKS = $(wildcard chapters/*.ipynb)
lint: $(STAMP)
	$(RUFF) check .
	$(RUFF) format --check .

format: $(STAMP)
	$(RUFF) format .
	sed -i 's/"#|/"#:|/g' $(NOTEBOOKS); $(RUFF) format $(NOTEBOOKS); status=$$?; \
	  sed -i 's/"#:|/"#|/g' $(NOTEBOOKS); exit $$status
	$(RUFF) check $(NOTEBOOKS)

test: lint export vendor
	$(PY) -m pytest tests chapters $(NBVAL_ARGS) -n $(WORKERS) --durations=25 $(addprefix --ignore=,$(TRAINING_NB)) $(PYTEST_ARGS)
	$(PY) -m pytest $(TRAINING_NB) $(NBVAL_ARGS) --durations=10 $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-other-cpu

# The same verdict on other processors: the machine-sensitive chapters once more, as two other
# kinds of CPU run them. First as a CPU without AVX-512 and without native bf16 (PyTorch's and
# oneDNN's AVX2 kernels, and float32 wherever a preset says bf16="auto"); then with PyTorch's
# plain (non-vectorised) kernels and three threads, a stand-in for builds with other vector
# kernels such as ARM's. Harmless where the CPU is such a one already (on ARM the ISA variables
# are ignored). Chosen to keep `make test` under 35 minutes on 2 cores: chapters whose digits a
# processor moves (they have loose cells) and chapter 10, whose decoding of stored weights must
# stay exact; each pass takes about 3 minutes. Chapter 2's loose cells (2 minutes more) and the
# training chapters 11a-12b (18 minutes more) passed under the AVX2 environment when measured;
# run them with `make test-other-cpu OTHER_CPU_CHAPTERS="chapters/02*.ipynb ..."` (both passes
# take that list).
OTHER_CPU_ENV := ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2 TRANSFORMER_BF16=0
OTHER_CPU_PLAIN_ENV := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=3 TRANSFORMER_BF16=0
OTHER_CPU_CHAPTERS ?= chapters/06_encoder.ipynb chapters/07_decoder_cross_attention.ipynb \
	chapters/10_decoding.ipynb chapters/13_beyond.ipynb
test-other-cpu: $(STAMP)
	env $(OTHER_CPU_ENV) $(PY) -m pytest $(OTHER_CPU_CHAPTERS) $(NBVAL_ARGS) -n $(WORKERS) -p no:cacheprovider
	env $(OTHER_CPU_PLAIN_ENV) $(PY) -m pytest $(OTHER_CPU_CHAPTERS) $(NBVAL_ARGS) -n $(WORKERS) -p no:cacheprovider

unit: $(STAMP)
	$(PY) -m pytest tests -m "not book and not browser and not acceptance" -p no:nbval

# Every exercise check against the book's solution and three other right answers, 300 calls each from
# fresh seeds: none may be rejected (tests/test_exercises_sweep.py; `make test` runs it seeded, 2 calls).
.PHONY: test-slow
# Then the users' paths from fresh virtual environments outside the checkout (tests/test_acceptance.py:
# a Colab-like runner of chapters 1, 5, 8 and 10 in both languages, an importer of the built wheel;
# installs from PyPI; 23 minutes on 2 loaded cores); then the web book's audit of every page of both
# editions (tests/test_web.py with WEB_ALL_PAGES=1; make test audits a sample).
test-slow: export
	EXERCISE_CALLS=300 $(PY) -m pytest tests/test_exercises_sweep.py -p no:nbval -p no:cacheprovider
	$(PY) -m pytest tests/test_acceptance.py -m acceptance -p no:nbval -p no:cacheprovider
	WEB_ALL_PAGES=1 $(PY) -m pytest tests/test_web.py -p no:nbval -p no:cacheprovider

nbval: $(STAMP)
	$(PY) -m pytest chapters $(NBVAL_ARGS)

# The quick tier (CONTRIBUTING, *The quick tier*): the tests that need neither the built book, a
# browser nor a fresh venv, less the slow runs below (training, several processes, the GPU check's
# smoke runs, an edition under nbval: make test runs them), then strict nbval of exactly the
# chapters that differ from QUICK_BASE (HEAD: the changes not yet committed), those whose recorded
# inputs changed, and the chapters that read from them (`booktools execute --changed`).
BOOKTOOLS = $(PY) -m booktools
QUICK_BASE ?= HEAD
QUICK_DESELECT := \
	--ignore=tests/test_distributed.py \
	--deselect tests/test_gpu_path.py::test_gpu_check_smoke_runs_the_extras_when_asked \
	--deselect tests/test_gpu_path.py::test_gpu_check_smoke_runs_the_core_bounded_by_steps \
	--deselect tests/test_manners.py::test_compile_fullgraph_no_graph_break \
	--deselect tests/test_training.py::test_ddp_two_processes_on_gloo \
	--deselect tests/test_training.py::test_gpu_script_smoke_on_cpu \
	--deselect tests/test_training.py::test_gpu_run_sh_smoke_on_multi30k \
	--deselect tests/test_training.py::test_cli_runs_and_resumes \
	--deselect tests/test_training.py::test_cli_under_torchrun_gloo \
	--deselect tests/test_training.py::test_tiny_run_learns_and_writes_files \
	--deselect tests/test_editions.py::test_an_edition_runs_top_to_bottom_under_nbval \
	--deselect tests/test_mpl_backend.py::test_strict_nbval_sees_figures_under_agg \
	--deselect tests/test_mpl_backend.py::test_execute_displays_figures_under_agg \
	--deselect tests/test_mpl_backend.py::test_without_the_root_conftest_the_figure_is_missing \
	--deselect tests/test_publish.py::test_install_cell_installs_the_package_in_a_fresh_venv
test-quick: lint export
	$(PY) -m pytest tests -m "not book and not browser and not acceptance" -p no:nbval --durations=10 \
	  -n $(WORKERS) $(QUICK_DESELECT) $(PYTEST_ARGS)
	@chapters="$$($(BOOKTOOLS) execute --changed $(QUICK_BASE))" || exit 2; \
	  if [ -z "$$chapters" ]; then echo "no chapter changed since $(QUICK_BASE): none to run under nbval"; \
	  else echo "strict nbval of:" $$chapters; $(PY) -m pytest $$chapters $(NBVAL_ARGS) -p no:cacheprovider; fi

# Re-execute a chapter, then every chapter that reads what it writes, in order (chapter metadata
# "book": "reads"/"writes", scripts/execute.py): Make runs a generated file with one stamp per chapter.
# One recipe line, so that `make -n execute NB=...` writes that file and prints the plan (Make runs a
# line that calls $(MAKE) even in a dry run; the stamps are prepared, nothing is executed).
EXECUTE_DIR := _build/execute
execute: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make execute NB=chapters/XX.ipynb"; exit 2; }
	$(BOOKTOOLS) execute --makefile $(EXECUTE_DIR)/chapters.mk --since $(NB) \
	  && $(MAKE) --no-print-directory -f $(EXECUTE_DIR)/chapters.mk PY=$(PY)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# The paper's Table 3 rerun (chapter 12, results/table3.json): every row not yet in the file, two at a
# time on one thread each (about an hour on 2 cores); ROW=A-h1 runs (or reruns) that row alone.
ROW ?=
table3: $(STAMP)
	$(PY) scripts/table3.py $(if $(ROW),--row $(ROW))

# The cpu preset of chapter 11b: metrics.jsonl, summary.json, checkpoint.pt into runs/cpu
# (git-ignored). Data: the folder in TRANSFORMER_DATA_DIR, else the cache, else a download.
TRAIN_ARGS ?=
PRESET ?= cpu
train: $(STAMP)
	$(PY) -m transformer_lib.train --preset $(PRESET) --out runs/$(PRESET) $(TRAIN_ARGS)

clean:
	rm -rf _build book/_vendor
