# The two commands: `make demo` and `make test`. Everything they need is installed here.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
NATIVE_BUILD := build/native-tests

.PHONY: demo test native-test py-test lint bench clean

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

# Non-editable install: exactly what a user gets, native tools compiled by the package build.
$(STAMP): $(VENV)/bin/python pyproject.toml $(shell find native src -type f 2>/dev/null)
	$(VPY) -m pip install -q ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/intercore demo

native-test:
	cmake -S native -B $(NATIVE_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(NATIVE_BUILD) -j2 >/dev/null
	cd $(NATIVE_BUILD) && ctest --output-on-failure

py-test: $(STAMP)
	$(VPY) -m pytest tests

# Shell where a linter sees it: the ssh executor's remote driver and this CI's entry point.
SHELL_SCRIPTS := .ci/run $(shell find src bench examples -name '*.sh' 2>/dev/null)

lint:
	@command -v shellcheck >/dev/null || { echo "make lint needs shellcheck (apt-get install shellcheck)" >&2; exit 3; }
	shellcheck $(SHELL_SCRIPTS)

test: native-test lint py-test

bench: $(STAMP)
	$(VPY) bench/region_overhead.py
	$(VPY) bench/aggressor_strength.py
	$(VPY) bench/model_analysis.py
	$(VPY) bench/fusion.py
	$(VPY) bench/bandwidth.py

clean:
	rm -rf $(VENV) build
