#!/bin/sh
# run.sh BUILD_DIR PYTHON: build the native tools with AddressSanitizer and
# UndefinedBehaviorSanitizer, run their unit tests (ctest), then the Python tests that drive
# every tool (tests/native) against those builds (INTERCORE_BIN_DIR).
#
# A finding fails the run wherever it happens: UBSan stops at the first undefined behaviour,
# ASan at the first bad access, LeakSanitizer reports at exit, and each writes a report under
# BUILD_DIR/reports that is printed here (a tool started by a test may have its stderr
# swallowed by the test). Left out: the tests that measure rate or memory residency, which
# the sanitizers' own instrumentation and shadow memory change, not the code's correctness,
# and the planted-spike profile: ASan's start-up and LeakSanitizer's exit scan fault pages
# of their own, as many as the victim's bursts, so the profiled program is no longer the one
# the test plants its bursts in (the auto threshold, a median, then sits inside the bursts).
set -eu

[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR PYTHON" >&2; exit 2; }
BUILD=$1
PYTHON=$2
FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

# ictrace is left out: a Valgrind tool runs without libc, so no sanitizer runtime can load.
cmake -S native -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$FLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DIC_VALGRIND_TOOL=OFF >/dev/null
cmake --build "$BUILD" -j2 >/dev/null

REPORTS=$(cd "$BUILD" && pwd)/reports
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$REPORTS/asan"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$REPORTS/ubsan"
INTERCORE_BIN_DIR=$(cd "$BUILD" && pwd)/bin
export ASAN_OPTIONS UBSAN_OPTIONS INTERCORE_BIN_DIR

status=0
ctest --test-dir "$BUILD" --output-on-failure || status=1
# tests/native drives the measurement tools; the others drive the bandwidth tools (ic-profile,
# ic-regulate, ic-gang) through the Python layer that starts them.
"$PYTHON" -m pytest -q -p no:cacheprovider tests/native tests/measure/test_profile.py \
  tests/measure/test_bwevents.py tests/cli/test_profile_cli.py tests/mitigate/test_regulator.py \
  tests/mitigate/test_gang.py -k "not prefault and not rate_throttles and not planted_spike" || status=1
# ic-run on programs that need no kit: a program built against the sanitized kit would need
# the sanitizers' link flags, which are not the user's.
"$PYTHON" -m pytest -q -p no:cacheprovider tests/cli/test_user_program.py \
  -k "one_region_the_whole_run or failing_program or ic_run_refuses" || status=1

for report in "$REPORTS"/*; do
  [ -e "$report" ] || continue
  echo "== sanitizer report $report" >&2
  cat "$report" >&2
  status=1
done
exit "$status"
