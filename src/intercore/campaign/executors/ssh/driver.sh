#!/bin/sh
# The remote driver of the ssh executor (executor.py): one paired run on the board.
#
# Arguments: BIN VCPU READY_TIMEOUT VICTIM [AGGRESSOR...]. BIN holds ic-victim and ic-aggr;
# VICTIM and each AGGRESSOR are one tool's arguments joined by the ASCII unit separator
# (0x1f), which no argument contains, so they reach the tools word for word without eval.
# stdin carries one command per repetition ("iso" or "int", sent a window ahead so no
# repetition waits for a network round trip), then "end". stdout carries the victim's JSON
# lines verbatim and the driver's own as {"event":"driver.*"}, all written by one process.
# A watcher process owns stdin: at end of input before "end" (the session is gone) it kills
# everything at once, even while the driver waits for a long repetition.
# Needs a POSIX shell with od, grep, mkfifo and mktemp; taskset when present.
set -u
BIN=$1 VCPU=$2 READY_TIMEOUT=$3 VICTIM=$4
shift 4
US=$(printf '\037')
RUN='' PIDS='' APS='' N=0 LEADER=0 MODE=1 BYTES='' STATES='' LINE='' VP='' WP='' MAIN=''
pgid=''; read -r _ _ _ _ pgid _ 2>/dev/null </proc/$$/stat
[ "$pgid" = "$$" ] && LEADER=1

stop_all() {
  for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$RUN" ] && rm -rf "$RUN"
}
dropped() {  # the session is gone or a signal came: leave nothing behind
  trap - EXIT HUP INT TERM PIPE
  stop_all
  [ "$LEADER" = 1 ] && kill -KILL 0
  exit 1
}
trap dropped EXIT HUP INT TERM PIPE
fail() {  # WHO RC ERRFILE: report, relay the tool's stderr, exit 2 for a usage error
  printf '{"event":"driver.fail","who":"%s","rc":%d}\n' "$1" "$2"
  [ -s "$3" ] && { printf '%s: ' "$1"; tail -n 20 "$3"; } >&2  # bounded: nobody drains stderr
  trap - EXIT HUP INT TERM PIPE
  stop_all
  [ "$2" = 2 ] && exit 2
  exit 1
}
alive() { st=; read -r _ _ st _ 2>/dev/null <"/proc/$1/stat"; [ -n "$st" ] && [ "$st" != Z ]; }
# Shell variables are global: each helper counts with its own letter.
aggressors_alive() {
  k=0
  for q in $APS; do
    alive "$q" || { wait "$q"; fail "aggressor $k" $? "$RUN/aggr$k.err"; }
    k=$((k+1))
  done
}
nap() { sleep 0.01 2>/dev/null || sleep 1; }
counters() {  # STATES: every control block's state; BYTES: their byte counters (u32 pairs)
  STATES='' BYTES=''
  j=0
  while [ "$j" -lt "$N" ]; do
    # shellcheck disable=SC2046  # od prints the five words this splits into $1..$5
    set -- $(od -An -tu4 -j12 -N20 "$RUN/ctl$j")
    STATES="$STATES${1:-?}" BYTES="$BYTES${BYTES:+,}${4:-0},${5:-0}"
    j=$((j+1))
  done
}
# Signal only on a change, then wait for the new state: two opposite signals pending at
# once are handled in an order of the kernel's choosing (a nested handler runs first), so a
# late redundant SIGUSR1 could undo the SIGUSR2 sent after it.
# Unchanged mode: BYTES still holds the counters read at the end of the last repetition,
# as fresh as a new read would be (each read is a fork, the slowest thing here).
set_mode() {  # SIGNAL STATE; BYTES: the counters once the state holds
  [ "$MODE" = "$2" ] && return
  MODE=$2
  for q in $APS; do kill "-$1" "$q" 2>/dev/null; done
  want='' k=0
  while [ "$k" -lt "$N" ]; do want="$want$2" k=$((k+1)); done
  t=0
  until counters; [ "$STATES" = "$want" ]; do
    aggressors_alive
    t=$((t+1))
    [ "$t" -gt 5000 ] && fail "aggressors (state $STATES, not $want, after SIG$1)" 1 /dev/null
  done
}
spawn() {  # TOOL STDIN STDOUT STDERR JOINED: $BIN/TOOL in the background, JOINED its arguments
  tool=$1 stdin=$2 stdout=$3 stderr=$4
  set -f; IFS=$US
  # shellcheck disable=SC2086  # split at the unit separators only, with globbing off
  set -- $5
  unset IFS; set +f
  "$BIN/$tool" "$@" <"$stdin" >"$stdout" 2>"$stderr" &
}
start_aggr() {  # JOINED: the arguments of one ic-aggr
  spawn ic-aggr /dev/null "$RUN/aggr$N.out" "$RUN/aggr$N.err" "$1${US}--control${US}$RUN/ctl$N"
  PIDS="$PIDS $!" APS="$APS $!" N=$((N+1))
}
vline() {  # the victim's next stdout line into LINE, relayed
  IFS= read -r LINE <&4 || { wait "$VP"; fail victim $? "$RUN/verr"; }
  printf '%s\n' "$LINE"
}
until_rep() { while vline; do case $LINE in *'"event":"rep"'*) return ;; esac; done; }
watch() {
  while IFS= read -r c; do printf '%s\n' "$c"; done
  stop_all
  [ "$LEADER" = 1 ] && kill -KILL 0
  kill -KILL "$MAIN"
}
finish() {
  kill -KILL "$WP"; wait "$WP" 2>/dev/null
  exec 5>&-
  cat <&4
  wait "$VP"; rc=$?
  [ "$rc" = 0 ] || fail victim "$rc" "$RUN/verr"
  for p in $APS; do kill -TERM "$p"; done
  i=0
  for p in $APS; do
    wait "$p"; rc=$?
    [ "$rc" = 0 ] || fail "aggressor $i" "$rc" "$RUN/aggr$i.err"
    while IFS= read -r line; do
      printf '{"event":"driver.aggressor","index":%d,"line":%s}\n' "$i" "$line"
    done <"$RUN/aggr$i.out"
    i=$((i+1))
  done
  trap - EXIT HUP INT TERM PIPE
  rm -rf "$RUN"
  printf '{"event":"driver.done"}\n'
  exit 0
}

for d in /dev/shm "${TMPDIR:-/tmp}"; do [ -d "$d" ] && [ -w "$d" ] && break; done
RUN=$(mktemp -d "$d/intercore.XXXXXX") || { RUN=; fail "scratch directory in $d" 1 /dev/null; }
PINNED=false
command -v taskset >/dev/null 2>&1 && taskset -pc "$VCPU" $$ >/dev/null 2>&1 && PINNED=true

for spec in "$@"; do start_aggr "$spec"; done
deadline=$(( $(date +%s) + READY_TIMEOUT ))
i=0
for p in $APS; do
  until grep -q '"event":"ready"' "$RUN/aggr$i.out" 2>/dev/null; do
    aggressors_alive
    [ "$(date +%s)" -lt "$deadline" ] || fail "aggressor $i (not ready)" 1 "$RUN/aggr$i.err"
    nap
  done
  i=$((i+1))
done
printf '{"event":"driver.ready","pinned":%s,"leader":%s}\n' "$PINNED" \
  "$([ "$LEADER" = 1 ] && echo true || echo false)"

mkfifo "$RUN/vin" "$RUN/vout" "$RUN/cmd" || fail "fifos in $RUN" 1 /dev/null
spawn ic-victim "$RUN/vin" "$RUN/vout" "$RUN/verr" "$VICTIM"
VP=$!; PIDS="$PIDS $VP"
exec 5>"$RUN/vin" 4<"$RUN/vout"
MAIN=$$
exec 3<&0
watch <&3 >"$RUN/cmd" &
WP=$!; PIDS="$PIDS $WP"
# Not on the victim's CPU: a SCHED_FIFO repetition would starve the watcher there (boards
# often run with RT throttling off), and a dropped session must be noticed at once.
[ "$PINNED" = true ] && taskset -pc "$(cat /sys/devices/system/cpu/online)" "$WP" >/dev/null 2>&1
exec 3<&- 6<"$RUN/cmd" </dev/null
vline
counters

while IFS= read -r cmd <&6; do
  case $cmd in
    iso) set_mode USR1 2 ;;
    int) set_mode USR2 1 ;;
    end) finish ;;
    *) fail "driver (unknown command '$cmd')" 1 /dev/null ;;
  esac
  before=$BYTES
  alive "$VP" || { wait "$VP"; fail victim $? "$RUN/verr"; }
  echo go >&5
  until_rep
  [ "$MODE" = 2 ] || counters  # paused aggressors moved nothing: spare the fork
  printf '{"event":"driver.rep","before":[%s],"after":[%s]}\n' "$before" "$BYTES"
done
dropped
