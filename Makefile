# The two commands: `make demo` and `make test`. Everything they need is installed here.
# `make test-fast` is the inner loop beside them (docs/testing.md).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
NATIVE_BUILD := build/native-tests
ARM64_BUILD  := build/arm64

.PHONY: demo test test-fast native-test native-test-arm64 native-sanitize py-test lint bench clean \
        lock test-latest

# The exact versions, with hashes, that the tests passed with (pip itself and the wheel's build
# requirements included): a fresh machine installs what was tested, not what was released
# today. `make lock` re-resolves it; `make test-latest` tries the newest releases beside it.
LOCK := requirements.lock

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)

# Non-editable install: exactly what a user gets, native tools compiled by the package build
# (without build isolation, so the build requirements are the locked ones too).
$(STAMP): $(VENV)/bin/python pyproject.toml $(LOCK) $(shell find native src -type f 2>/dev/null)
	$(VPY) -m pip install -q --require-hashes -r $(LOCK)
	$(VPY) -m pip install -q --no-deps --no-build-isolation .
	$(VPY) -m pip check
	touch $(STAMP)

lock:
	.ci/lock

test-latest:
	.ci/latest

demo: $(STAMP)
	$(VENV)/bin/intercore demo

# -DIC_WERROR=ON: a compiler warning fails the test run (users build without it).
native-test:
	cmake -S native -B $(NATIVE_BUILD) -DCMAKE_BUILD_TYPE=Release -DIC_WERROR=ON >/dev/null
	cmake --build $(NATIVE_BUILD) -j2 >/dev/null
	cd $(NATIVE_BUILD) && ctest --output-on-failure

# The native tools cross-built for 64-bit Arm boards; their tests run under qemu-user, in a
# namespace where aarch64 binaries execute as on a board (tests that start the tools too).
# tests/campaign/test_ssh_arm64_board.py pushes this build to an emulated board.
native-test-arm64:
	@command -v aarch64-linux-gnu-gcc >/dev/null || { echo "make native-test-arm64 needs gcc-aarch64-linux-gnu and qemu-user (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)" >&2; exit 3; }
	cmake -S native -B $(ARM64_BUILD) -DCMAKE_BUILD_TYPE=Release -DIC_WERROR=ON \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/native/cross/aarch64-linux-gnu.cmake >/dev/null
	cmake --build $(ARM64_BUILD) -j2 >/dev/null
	native/cross/emulated.sh aarch64 ctest --test-dir $(ARM64_BUILD) --output-on-failure

py-test: $(STAMP)
	$(VPY) -m pytest tests --durations=30

# The inner loop, under three minutes on two CPUs: ruff, then every Python test not marked
# slow; a test that outgrew the lane fails by name (tests/_lanes.py). `make test` runs all.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check -q src tests bench
	$(VPY) -m pytest tests --fast-lane -q --durations=10

# The native tools built with ASan and UBSan: their unit tests, and tests/native driving them.
native-sanitize: $(STAMP)
	native/sanitize/run.sh build/native-sanitize $(VPY)

# Shell where a linter sees it: the ssh executor's remote driver, this CI's entry point and
# the stand-in systemctl of the service tests.
SHELL_SCRIPTS := .ci/run .ci/lock .ci/latest tests/mitigate/fake_systemd/systemctl $(shell find src native bench examples -name '*.sh' 2>/dev/null)

# The Python with ruff (pyproject's [tool.ruff]) and mypy over src/intercore ([tool.mypy]), both
# from the test extra's exact pins, so every machine flags the same lines.
lint: $(STAMP)
	@command -v shellcheck >/dev/null || { echo "make lint needs shellcheck (apt-get install shellcheck)" >&2; exit 3; }
	shellcheck $(SHELL_SCRIPTS)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

test: native-test native-test-arm64 lint py-test native-sanitize

# Every script in bench/ (files starting with "_" are helpers), each one command, in pipeline
# order; all run even when one fails, and the target fails naming those whose goals were
# missed, missing or refused (bench/_goals.py). tests/bench/test_bench.py checks that none
# is left out of this list.
BENCHES := bench/model_analysis.py bench/region_overhead.py bench/canary_probe.py \
           bench/aggressor_strength.py bench/regime_stratification.py \
           bench/campaign_plan.py bench/campaign_overhead.py bench/lab_scaling.py \
           bench/learn.py bench/fusion.py bench/bandwidth.py bench/protection.py \
           bench/region_windows.py bench/assess_example.py \
           bench/watchdog.py bench/core_probe.py bench/backends.py bench/schedule.py \
           bench/compile_time.py

bench: $(STAMP)
	@failed=""; for b in $(BENCHES); do echo "== $$b"; $(VPY) "$$b" || failed="$$failed $$b"; \
	done; if [ -n "$$failed" ]; then echo "benchmarks that did not pass:$$failed"; exit 1; fi

clean:
	rm -rf $(VENV) build
