# `make run` and `make test` set everything up first when needed (see scripts/setup.sh).
VENV := .venv
PY := $(VENV)/bin/python
export QT_API := pyside6

.PHONY: setup run test lint bench package smoke verify-clean clean

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

# The built bundle and .deb, headless, on this machine (a minute).
smoke:
	bash packaging/smoke.sh

# The .deb on a clean Debian 12 root with no network and no source tree (as root; about ten
# minutes, not part of `make test`). Builds the package first when there is none.
verify-clean:
	@ls dist/analogy-studio_*.deb >/dev/null 2>&1 || $(MAKE) package
	bash packaging/verify-clean.sh

clean:
	rm -rf build dist .pytest_cache
