# `make run` and `make test` set everything up first when needed (see scripts/setup.sh).
VENV := .venv
PY := $(VENV)/bin/python
export QT_API := pyside6

.PHONY: setup run test lint bench package clean

setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m studio gui --demo

test: setup
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check studio tests bench plugins
	$(VENV)/bin/mypy
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider -n auto --dist loadfile

lint: setup
	$(VENV)/bin/ruff check studio tests bench plugins
	$(VENV)/bin/ruff format --check studio tests bench plugins
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

bench: setup
	$(PY) bench/run.py render
	$(PY) bench/run.py import
	QT_QPA_PLATFORM=offscreen $(PY) bench/run.py grid
	$(PY) bench/run.py preview3d
	$(PY) bench/run.py polyominoes
	QT_QPA_PLATFORM=offscreen $(PY) bench/run.py worker
	$(PY) bench/run.py answersets

package: setup
	bash packaging/build.sh

clean:
	rm -rf build dist .pytest_cache
