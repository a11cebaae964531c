#!/bin/sh
# The remote driver of the ssh executor (executor.py): one paired run on the board.
#
# Arguments: BIN VCPU READY_TIMEOUT VICTIM [AGGRESSOR...]. BIN holds ic-victim and ic-aggr;
# VICTIM is the victim's arguments and each AGGRESSOR its aggressor set's number followed by
# the tool's arguments, joined by the ASCII unit separator (0x1f), which no argument
# contains, so they reach the tools word for word without eval. Every aggressor starts
# parked (paused, then SIGSTOP). stdin carries one command per repetition, "iso SET" or
# "int SET" (sent a window ahead so no repetition waits for a network round trip), then
# "end": the set named is unparked (the one before it paused and parked) and paused or
# resumed, so the sets take turns in blocks while the others hold neither CPU nor memory.
# stdout carries the victim's JSON lines verbatim and the driver's own as
# {"event":"driver.*"}, all written by one process.
# A watcher process owns stdin: at end of input before "end" (the session is gone) it kills
# everything at once, even while the driver waits for a long repetition.
# Needs a POSIX shell with od, grep, mkfifo and mktemp; taskset when present.
set -u
BIN=$1 VCPU=$2 READY_TIMEOUT=$3 VICTIM=$4
shift 4
US=$(printf '\037')
# APS: one PID:SET entry per aggressor; ACTIVE: the set that is not parked ("all" before
# the first command, "none" once everything is parked).
RUN='' PIDS='' APS='' N=0 LEADER=0 MODE=1 BYTES='' STATES='' LINE='' VP='' WP='' MAIN=''
ACTIVE=all
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
stopped() { st=; read -r _ _ st _ 2>/dev/null <"/proc/$1/stat"; [ "$st" = T ] || [ "$st" = t ]; }
in_active() { [ "$ACTIVE" = all ] || [ "${1#*:}" = "$ACTIVE" ]; }  # PID:SET
aggressors_alive() {
  k=0
  for e in $APS; do
    q=${e%%:*}
    alive "$q" || { wait "$q"; fail "aggressor $k" $? "$RUN/aggr$k.err"; }
    k=$((k+1))
  done
}
nap() { sleep 0.01 2>/dev/null || sleep 1; }
counters() {  # STATES: the active set's control block states; BYTES: every block's bytes
  STATES='' BYTES=''
  j=0
  for e in $APS; do
    # shellcheck disable=SC2046  # od prints the five words this splits into $1..$5
    set -- $(od -An -tu4 -j12 -N20 "$RUN/ctl$j")
    in_active "$e" && STATES="$STATES${1:-?}"
    BYTES="$BYTES${BYTES:+,}${4:-0},${5:-0}"
    j=$((j+1))
  done
}
# Signal only on a change, then wait for the new state: two opposite signals pending at
# once are handled in an order of the kernel's choosing (a nested handler runs first), so a
# late redundant SIGUSR1 could undo the SIGUSR2 sent after it.
# Unchanged mode: BYTES still holds the counters read at the end of the last repetition,
# as fresh as a new read would be (each read is a fork, the slowest thing here).
set_mode() {  # SIGNAL STATE: of the active set; BYTES: the counters once the state holds
  [ "$MODE" = "$2" ] && return
  MODE=$2
  want=''
  for e in $APS; do
    in_active "$e" && { kill "-$1" "${e%%:*}" 2>/dev/null; want="$want$2"; }
  done
  t=0
  until counters; [ "$STATES" = "$want" ]; do
    aggressors_alive
    t=$((t+1))
    [ "$t" -gt 5000 ] && fail "aggressors (state $STATES, not $want, after SIG$1)" 1 /dev/null
  done
}
activate() {  # SET: the active set pauses and is parked; SET is unparked, still paused
  [ "$ACTIVE" = "$1" ] && return
  set_mode USR1 2
  for e in $APS; do in_active "$e" && kill -STOP "${e%%:*}"; done
  for e in $APS; do
    in_active "$e" || continue
    t=0
    until stopped "${e%%:*}"; do
      aggressors_alive
      t=$((t+1))
      [ "$t" -gt 5000 ] && fail "aggressor ${e%%:*} (not stopped after SIGSTOP)" 1 /dev/null
    done
  done
  ACTIVE=$1
  for e in $APS; do in_active "$e" && kill -CONT "${e%%:*}"; done
  counters
}
spawn() {  # TOOL STDIN STDOUT STDERR JOINED: $BIN/TOOL in the background, JOINED its arguments
  tool=$1 stdin=$2 stdout=$3 stderr=$4
  set -f; IFS=$US
  # shellcheck disable=SC2086  # split at the unit separators only, with globbing off
  set -- $5
  unset IFS; set +f
  "$BIN/$tool" "$@" <"$stdin" >"$stdout" 2>"$stderr" &
}
start_aggr() {  # JOINED: the aggressor's set, then the arguments of one ic-aggr
  set_no=${1%%"$US"*}
  spawn ic-aggr /dev/null "$RUN/aggr$N.out" "$RUN/aggr$N.err" \
    "${1#*"$US"}${US}--control${US}$RUN/ctl$N"
  PIDS="$PIDS $!" APS="$APS $!:$set_no" N=$((N+1))
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
  for e in $APS; do kill -CONT "${e%%:*}"; kill -TERM "${e%%:*}"; done
  i=0
  for e in $APS; do
    wait "${e%%:*}"; rc=$?
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
for e in $APS; do
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
activate none

while read -r cmd set_no <&6; do
  case $cmd in
    iso|int) case $set_no in ''|*[!0-9]*) fail "driver (command '$cmd' without a set)" 1 /dev/null ;; esac
             activate "$set_no" ;;
  esac
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
