"""The `ssh` executor: runs on a remote Linux board through the system OpenSSH client.

Nothing but the two workload binaries and a POSIX shell (with od, grep, mkfifo, mktemp) is
needed on the board: no Python. One ControlMaster connection per executor carries every
command, so a run costs one multiplexed session, not a new TCP connection and key exchange.
The binaries are pushed once, only when the board's copy has another sha256.

A run reproduces the measurement core's paired design remotely: a generated `sh` driver
(passed on the command line, never stored) starts the aggressors pinned with their control
blocks, starts the victim with `--sync`, and for each repetition, in the iso/int order drawn
here from the request's seed and streamed a window ahead, pauses or resumes the aggressors
with SIGUSR1/SIGUSR2, waits until every control block reports the new state, and tells the
victim "go". The victim's JSON lines come back over the session's stdout and become samples
through the harness's own parser; the workload records are built by the local executor's
`to_output`, so local and remote runs are stored alike.

The driver is the session leader sshd made it. A watcher process reads the session's stdin:
when the connection drops (or this process dies, taking its ssh clients with it), stdin ends
before the driver's "end" command and the watcher kills the whole session and removes its
scratch directory at once, even in the middle of a long repetition. Host keys are checked
against known_hosts; an unknown key is refused unless the campaign explicitly accepts a new
key on first use, and a changed key is always refused.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ...errors import HostUnsupported, InputError, NativeError
from ...host.report import fingerprint
from ...host.topology import Topology, read_topology
from ...measure import harness
from ...measure import schedule as sched
from ...measure.harness import READY_TIMEOUT_S, REP_TIMEOUT_S
from ...measure.procs import NativeProcess, die_with_parent
from ...native import bin_dir as default_bin_dir
from .base import RunOutput, RunRequest
from .local import BINARIES, LocalExecutor, file_sha256, to_output

DEFAULT_WORKDIR = ".intercore"
CONNECT_TIMEOUT_S = 15
COMMAND_TIMEOUT_S = 120.0
COMMANDS_AHEAD = 32
# Cross-built trees: the board's `uname -m` and the ELF e_machine values it executes.
_ELF_MACHINES = {3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390",
                 40: "32-bit Arm", 62: "x86-64", 183: "AArch64", 243: "RISC-V",
                 258: "LoongArch"}


# ---- configuration -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SshTarget:
    """The campaign file's `ssh:` section. Paths are local except `workdir`, which lives on
    the board (relative paths start in the remote user's home directory)."""

    host: str
    user: str | None = None
    port: int | None = None
    identity: Path | None = None
    workdir: str = DEFAULT_WORKDIR
    bin_dir: Path | None = None       # native tools built for the board; default: this host's
    known_hosts: Path | None = None   # default: ssh's own (~/.ssh/known_hosts)
    accept_new_host_key: bool = False  # trust an unknown key on first use (never a changed one)
    config: Path | None = None        # an ssh_config file instead of ~/.ssh/config

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any]) -> SshTarget:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(known))})", field="ssh")
        if not section.get("host"):
            raise InputError("the board's host name or address is required", field="ssh.host")
        values = dict(section)
        for key in ("identity", "bin_dir", "known_hosts", "config"):
            if values.get(key) is not None:
                values[key] = Path(values[key]).expanduser()
        if values.get("port") is not None:
            port = values["port"]
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise InputError(f"must be a TCP port number, got {port!r}", field="ssh.port")
        if not isinstance(values.get("accept_new_host_key", False), bool):
            raise InputError("must be true or false", field="ssh.accept_new_host_key")
        workdir = str(values.get("workdir") or DEFAULT_WORKDIR)
        values["workdir"] = _remote_path(workdir)
        return cls(**values)

    @property
    def label(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def _remote_path(path: str) -> str:
    """A workdir the remote shell can take quoted: `~/x` becomes `x` (ssh starts in home)."""
    if path in ("~", "~/"):
        return "."
    return path.removeprefix("~/")


# ---- pure helpers ------------------------------------------------------------------------------

def elf_machine(header: bytes) -> tuple[int, int]:
    """(e_machine, word size in bits) of an ELF file's first 20 bytes."""
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[4] not in (1, 2) \
            or header[5] not in (1, 2):
        raise ValueError("not an ELF file")
    order = "little" if header[5] == 1 else "big"
    return int.from_bytes(header[18:20], order), 32 if header[4] == 1 else 64


def runs_on(machine: str, e_machine: int, bits: int) -> bool | None:
    """Whether a kernel reporting `uname -m` = machine executes this ELF machine; None when
    the machine name is not one we know (the post-push trial run decides then). 64-bit Arm
    and x86 kernels also run their 32-bit siblings' binaries (e.g. a 32-bit userland)."""
    m = machine.lower()
    if m in ("x86_64", "amd64"):
        return e_machine in (62, 3)
    if m in ("i386", "i486", "i586", "i686"):
        return e_machine == 3
    if m in ("aarch64", "arm64", "aarch64_be"):
        return e_machine in (183, 40)
    if m.startswith("arm"):
        return e_machine == 40
    if m.startswith("riscv"):
        return e_machine == 243 and str(bits) in m
    if m.startswith("ppc64"):
        return e_machine == 21
    if m in ("ppc", "powerpc"):
        return e_machine == 20
    if m == "s390x":
        return e_machine == 22
    if m.startswith("mips"):
        return e_machine == 8
    if m.startswith("loongarch"):
        return e_machine == 258
    return None


# Everything read_topology and detect_hypervisor look at, printed in one `grep -H` process.
_SNAPSHOT_FILES = (
    "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/present",
    "/sys/devices/system/cpu/cpu[0-9]*/online",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/core_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id",
    *(f"/sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*/{leaf}"
      for leaf in ("level", "type", "size", "shared_cpu_list", "ways_of_associativity",
                   "number_of_sets", "coherency_line_size")),
    "/proc/cpuinfo", "/sys/hypervisor/type",
    "/sys/devices/virtual/dmi/id/product_name", "/sys/devices/virtual/dmi/id/sys_vendor",
    "/sys/devices/system/clocksource/clocksource0/available_clocksource",
)
_SNAPSHOT_CMD = ("echo '==uname'; uname -s; uname -n; uname -r; uname -m; uname -v; "
                 "echo '==files'; grep -H '' " + " ".join(_SNAPSHOT_FILES) + " 2>/dev/null; true")


@dataclass(frozen=True)
class BoardSnapshot:
    system: str
    hostname: str
    kernel: str
    machine: str
    version: str
    files: Mapping[str, str]  # remote path -> content

    @classmethod
    def parse(cls, text: str) -> BoardSnapshot:
        head, sep, body = text.partition("==files\n")
        uname = head.split("==uname\n", 1)[-1].splitlines()
        if not sep or len(uname) < 5:
            raise NativeError(f"the board's system description is incomplete: {text[:300]!r}")
        files: dict[str, list[str]] = {}
        for line in body.splitlines():
            path, colon, value = line.partition(":")
            if colon and path.startswith(("/sys/", "/proc/")) and ".." not in path:
                files.setdefault(path, []).append(value)
        return cls(*uname[:5], {p: "\n".join(v) + "\n" for p, v in files.items()})

    def topology(self) -> Topology:
        """The board's topology, read by the same code as this host's, from a copy."""
        with tempfile.TemporaryDirectory(prefix="ic-board-") as root:
            for path, content in self.files.items():
                target = Path(root) / path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content)
            return read_topology(Path(root))


def board_schedule(plan: harness.Plan) -> list[sched.Rep]:
    """The repetitions the driver is sent, in order: the measurement core's own schedule
    (measure/schedule.py) for the plan's one set, so a board measures in the order this host
    would."""
    return sched.repetitions(len(plan.sets), plan.runs, plan.block_pairs or plan.runs,
                             plan.seed)


def bytes_total(words: list[int]) -> int:
    """Sum of the control blocks' 64-bit byte counters, read by od as (low, high) u32 pairs."""
    return sum(lo + (hi << 32) for lo, hi in zip(words[::2], words[1::2]))


# ---- the remote driver -------------------------------------------------------------------------

# Arguments: BIN VICTIM_CPU; generated lines replace @AGGRESSORS@, @VICTIM@, @READY_TIMEOUT@.
# stdin carries one command per repetition ("iso" or "int", sent a window ahead so no
# repetition waits for a network round trip), then "end". stdout carries the victim's JSON
# lines verbatim and the driver's own as {"event":"driver.*"}, all written by one process.
# A watcher process owns stdin: at end of input before "end" (the session is gone) it kills
# everything at once, even while the driver waits for a long repetition.
_DRIVER = r"""
set -u
BIN=$1 VCPU=$2
RUN= PIDS= APS= N=0 LEADER=0 MODE=1 BYTES= STATES= LINE=
pgid=; read -r _ _ _ _ pgid _ 2>/dev/null </proc/$$/stat
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
  STATES= BYTES=
  j=0
  while [ "$j" -lt "$N" ]; do
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
  want= k=0
  while [ "$k" -lt "$N" ]; do want="$want$2" k=$((k+1)); done
  t=0
  until counters; [ "$STATES" = "$want" ]; do
    aggressors_alive
    t=$((t+1))
    [ "$t" -gt 5000 ] && fail "aggressors (state $STATES, not $want, after SIG$1)" 1 /dev/null
  done
}
start_aggr() {  # ARGS...
  "$BIN/ic-aggr" "$@" --control "$RUN/ctl$N" </dev/null >"$RUN/aggr$N.out" 2>"$RUN/aggr$N.err" &
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

@AGGRESSORS@
deadline=$(( $(date +%s) + @READY_TIMEOUT@ ))
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
"$BIN/ic-victim" @VICTIM@ <"$RUN/vin" >"$RUN/vout" 2>"$RUN/verr" &
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
"""


def _quoted(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def driver_script(plan: harness.Plan) -> str:
    """The driver for a one-set plan: its aggressors and victim, quoted for the shell."""
    (aset,) = plan.sets
    prio = ["--rt-priority", str(plan.aggressor_priority)] if plan.aggressor_priority else []
    starts = "\n".join(f"start_aggr {_quoted(m.argv() + ['--cpu', str(m.cpu), *prio])}"
                        for m in aset.members)
    vprio = ["--rt-priority", str(plan.victim_priority)] if plan.victim_priority else []
    victim = plan.victim.argv() + ["--reps", str(plan.total_reps), "--sync", "--cpu",
                                   str(plan.victim_cpu), "--seed", str(plan.seed), *vprio]
    return (_DRIVER.replace("@AGGRESSORS@", starts)
            .replace("@READY_TIMEOUT@", str(int(READY_TIMEOUT_S)))
            .replace("@VICTIM@", _quoted(victim)))


# ---- the connection ----------------------------------------------------------------------------

def _classify_ssh_failure(target: SshTarget, stderr: str) -> Exception:
    text = stderr.strip()
    if "Host key verification failed" in text or "host key is known" in text \
            or "IDENTIFICATION HAS CHANGED" in text:
        port = f"-p {target.port} " if target.port else ""
        return InputError(
            f"{target.label}: host key not trusted ({text.splitlines()[-1] if text else ''}). "
            f"Check the board's key fingerprint, then add it to known_hosts "
            f"(`ssh-keyscan {port}{target.host} >> ~/.ssh/known_hosts`), or set "
            "`accept_new_host_key: true` in the campaign's ssh section to trust an unknown "
            "key on first use (a changed key is always refused)", field="ssh")
    if "Permission denied" in text:
        return InputError(f"{target.label}: authentication refused ({text}); give the key with "
                          "`identity:` and add its .pub to the board's authorized_keys",
                          field="ssh")
    return NativeError(f"ssh to {target.label} failed: {text or 'no message'}")


class _Connection:
    """One ControlMaster connection; every command runs as a session multiplexed over it."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._dir = Path(tempfile.mkdtemp(prefix="ic-ssh-"))
        self._master: subprocess.Popen | None = None

    def _options(self) -> list[str]:
        t = self.target
        opts = ["-o", "BatchMode=yes",
                "-o", f"StrictHostKeyChecking={'accept-new' if t.accept_new_host_key else 'yes'}",
                "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
                "-o", f"ControlPath={self._dir / 'master'}", "-o", "LogLevel=ERROR"]
        if t.config is not None:
            opts += ["-F", str(t.config)]
        if t.known_hosts is not None:
            opts += ["-o", f'UserKnownHostsFile="{t.known_hosts}"']
        if t.identity is not None:
            opts += ["-i", str(t.identity), "-o", "IdentitiesOnly=yes"]
        if t.port is not None:
            opts += ["-p", str(t.port)]
        if t.user:
            opts += ["-l", t.user]
        return opts

    def open(self) -> None:
        if shutil.which("ssh") is None:
            raise HostUnsupported("the ssh executor needs the OpenSSH client (`ssh`) on this "
                                  "host: install openssh-client")
        parent = os.getpid()
        # PR_SET_PDEATHSIG follows the thread that forks: open the connection from the
        # thread that outlives the runs (the runner's), so the master dies with the process.
        self._master = subprocess.Popen(
            ["ssh", *self._options(), "-M", "-N", "-o", "ControlPersist=no", self.target.host],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=lambda: die_with_parent(parent))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 30
        while not (self._dir / "master").exists():
            if self._master.poll() is not None:
                err = self._master.stderr.read().decode(errors="replace")
                self._master = None
                raise _classify_ssh_failure(self.target, err)
            if time.monotonic() > deadline:
                self.close()
                raise NativeError(f"ssh to {self.target.label}: no connection after "
                                  f"{CONNECT_TIMEOUT_S + 30}s")
            time.sleep(0.02)

    def argv(self, command: str) -> list[str]:
        return ["ssh", *self._options(), "-o", "ControlMaster=no", self.target.host, command]

    def run(self, command: str, *, stdin: bytes | None = None,
            timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(self.argv(command), input=stdin, capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise NativeError(f"ssh to {self.target.label}: `{command[:80]}` did not finish "
                              f"in {timeout:.0f}s") from None

    def check(self, command: str, what: str, **kw) -> str:
        done = self.run(command, **kw)
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip()
            if done.returncode == 255:
                raise _classify_ssh_failure(self.target, err)
            raise NativeError(f"{self.target.label}: {what} failed "
                              f"(exit {done.returncode}): {err}")
        return done.stdout.decode(errors="replace")

    def close(self) -> None:
        if self._master is not None and self._master.poll() is None:
            self._master.terminate()
            try:
                self._master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._master.kill()
                self._master.wait()
        self._master = None
        shutil.rmtree(self._dir, ignore_errors=True)


# ---- the executor ------------------------------------------------------------------------------

class SshExecutor:
    """Runs requests on `target`. `on_start` is not called: the pids are on the board, and
    enforcement backends act on this host (the runner must not plan enforced setups here)."""

    name = "ssh"

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.bin_dir = target.bin_dir or default_bin_dir()
        self.pushed: list[str] = []  # binaries uploaded by this executor (not already there)
        self._conn: _Connection | None = None
        self._board: BoardSnapshot | None = None
        self._topo: Topology | None = None
        self._hashes: dict[str, str] | None = None
        self._installed = False

    # -- session state, each established once --

    @property
    def _remote_bin(self) -> str:
        return f"{self.target.workdir.rstrip('/') or '/'}/bin"

    def _binaries(self) -> dict[str, Path]:
        paths = {name: self.bin_dir / name for name in BINARIES}
        missing = [str(p) for p in paths.values() if not os.access(p, os.X_OK)]
        if missing:
            raise InputError(f"{', '.join(missing)} missing: build the native tools for the "
                             "board (see docs/remote-boards.md) and point `bin_dir:` at them",
                             field="ssh.bin_dir")
        return paths

    def _connect(self) -> _Connection:
        if self._conn is None:
            binaries = self._binaries()
            conn = _Connection(self.target)
            try:
                conn.open()
                board = BoardSnapshot.parse(conn.check(_SNAPSHOT_CMD, "reading the board"))
                self._check_arch(board, binaries)
            except BaseException:
                conn.close()
                raise
            self._conn, self._board = conn, board
            self._topo = board.topology()
            self._hashes = {name: file_sha256(p) for name, p in binaries.items()}
        return self._conn

    def _check_arch(self, board: BoardSnapshot, binaries: dict[str, Path]) -> None:
        for path in binaries.values():
            with open(path, "rb") as f:
                try:
                    machine, bits = elf_machine(f.read(20))
                except ValueError:
                    raise InputError(f"{path} is not an ELF executable",
                                     field="ssh.bin_dir") from None
            if runs_on(board.machine, machine, bits) is False:
                kind = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
                raise HostUnsupported(
                    f"{self.target.label} runs {board.machine}, but {path} is a {bits}-bit "
                    f"{kind} binary. Build the native tools for the board, e.g. "
                    "`cmake -S native -B build-board -DCMAKE_TOOLCHAIN_FILE=<your toolchain "
                    "file> && cmake --build build-board`, and set `bin_dir: build-board/bin` "
                    "in the campaign's ssh section (docs/remote-boards.md)")

    def _install(self) -> None:
        """Push the binaries whose remote copy differs, then prove they execute there."""
        conn = self._connect()
        if self._installed:
            return
        assert self._hashes is not None
        remote_bin = shlex.quote(self._remote_bin)
        listing = conn.check(f"cd {remote_bin} 2>/dev/null && sha256sum "
                             f"{' '.join(BINARIES)} 2>/dev/null; true", "hashing the binaries")
        there = {}
        for line in listing.splitlines():
            digest, _, name = line.partition("  ")
            there[name.strip()] = digest
        for name, path in self._binaries().items():
            if there.get(name) == self._hashes[name]:
                continue
            partial = shlex.quote(f"{self._remote_bin}/.{name}.partial")
            final = shlex.quote(f"{self._remote_bin}/{name}")
            # cat over the session needs neither scp nor an sftp server on the board.
            conn.check(f"mkdir -p {remote_bin} && cat > {partial} && chmod 755 {partial} "
                       f"&& mv -f {partial} {final}", f"pushing {name}",
                       stdin=path.read_bytes())
            self.pushed.append(name)
        for name in BINARIES:
            done = conn.run(f"{shlex.quote(self._remote_bin + '/' + name)} --list")
            if done.returncode != 0:
                err = done.stderr.decode(errors="replace").strip()
                raise HostUnsupported(
                    f"{self.target.label}: {name} does not run on the board ({err}); build the "
                    "native tools for it and set `bin_dir:` in the campaign's ssh section "
                    "(docs/remote-boards.md)")
        self._installed = True

    # -- the Executor protocol --

    def describe(self) -> dict[str, Any]:
        self._connect()
        board, topo = self._board, self._topo
        assert board is not None and topo is not None and self._hashes is not None
        return {
            "executor": self.name,
            "fingerprint": fingerprint(topo, board.kernel),
            "hostname": board.hostname,
            "kernel": board.kernel,
            "cpu_model": topo.model_name or "unknown",
            "ncpus": len(topo.online_cpus),
            "binaries": dict(self._hashes),
            "info": {
                "system": board.system, "machine": board.machine,
                "kernel_version": board.version, "vendor": topo.vendor,
                "hypervisor": topo.hypervisor, "online_cpus": list(topo.online_cpus),
                "caches": [{"level": c.level, "type": c.type, "size": c.size,
                            "ways": c.ways, "line": c.line, "shared_cpus": list(c.shared_cpus)}
                           for c in topo.caches()],
            },
        }

    def plan(self, request: RunRequest) -> harness.Plan:
        """The request checked and placed against the board's topology."""
        if any(item.strip().startswith("cmd:") for spec in request.engine
               for item in spec.split("+")):
            raise InputError("external `cmd:` aggressors cannot run on a board through the ssh "
                             "executor; use ic-aggr kinds (bw, pll, bankpll)", field="engine")
        self._connect()
        assert self._topo is not None
        plan = LocalExecutor(self._topo).plan(request)
        # Whether SCHED_FIFO is permitted is the board's business: the victim asks for it and
        # reports "rt": false when refused, as the native contract says.
        return plan if plan.victim_priority else replace(plan, victim_priority=1)

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        plan = self.plan(request)
        self._install()
        started = time.time()
        driver = self._start_driver(plan)
        try:
            run = _drive(driver, plan)
        except NativeError as e:
            failed = next((ln for ln in driver.lines if ln.get("event") == "driver.fail"), None)
            if failed is None:
                raise
            raise NativeError(f"{driver.name}: {failed['who']} failed "
                              f"(exit {failed['rc']}): {e}") from None
        finally:
            driver.kill()  # no-op after a clean end; otherwise the board sees the session end
        outcome = harness.Outcome(plan, harness.samples_from(run.lines, run.meta, {}, "cpu"),
                                  {"ready": run.ready, "end": run.end},
                                  {plan.sets[0].label: run.aggressor_stats},
                                  started, time.time())
        output = to_output(outcome, solo=not request.engine)
        if not run.driver_ready.get("pinned"):
            output.warnings.append(f"{self.target.label}: no taskset on the board, so the remote "
                                   "driver was not kept on the victim's CPU between repetitions")
        return output

    def _start_driver(self, plan: harness.Plan) -> NativeProcess:
        conn = self._connect()
        command = _quoted(["exec", "sh", "-c", driver_script(plan), "ic-driver",
                           self._remote_bin, str(plan.victim_cpu)])
        parent = os.getpid()
        proc = subprocess.Popen(conn.argv(command), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                preexec_fn=lambda: die_with_parent(parent))
        return NativeProcess(f"remote driver on {self.target.label}", ["ssh", "..."], proc)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._installed = False


@dataclass
class _RemoteRun:
    driver_ready: dict
    ready: dict
    end: dict
    lines: list[dict]
    meta: dict[int, harness.RepMeta]
    aggressor_stats: list[dict]


def _drive(driver: NativeProcess, plan: harness.Plan) -> _RemoteRun:
    """Feed the driver the repetition schedule and read the run back."""
    (aset,) = plan.sets
    schedule = board_schedule(plan)
    driver_ready = _expect(driver, "driver.ready", READY_TIMEOUT_S)
    ready = _expect(driver, "ready", READY_TIMEOUT_S)
    meta = {}
    sent = 0
    t0 = time.monotonic()
    block_start: dict[int, int] = {}
    for rep, r in enumerate(schedule):
        # A window of commands ahead: the board never waits for a round trip, and neither
        # side's pipes fill while the other is blocked writing.
        while sent < min(len(schedule), rep + COMMANDS_AHEAD):
            _send(driver, schedule[sent].condition)
            sent += 1
            if sent == len(schedule):
                _send(driver, "end")
        _expect(driver, "rep", REP_TIMEOUT_S)
        counters = _expect(driver, "driver.rep", 30.0)
        # Seen from here, a round trip late: the block's start as this host knows it.
        start = block_start.setdefault(r.block, int((time.monotonic() - t0) * 1e9))
        meta[rep] = harness.RepMeta(rep, r.pair, r.condition, aset.label,
                                    bytes_total(counters["after"])
                                    - bytes_total(counters["before"]), r.block, start)
    while driver.read_event(120.0).get("event") != "driver.done":
        pass  # the victim's samples, its end line and the aggressors' statistics
    lines = driver.finish(timeout=30.0)
    end = next((ln for ln in reversed(lines) if ln.get("event") == "end"), {})
    stats = [ln["line"] for ln in sorted(
        (ln for ln in lines if ln.get("event") == "driver.aggressor"), key=lambda ln: ln["index"])
        if ln["line"].get("event") == "stats"]
    return _RemoteRun(driver_ready, ready, end, lines, meta, stats)


def _send(driver: NativeProcess, line: str) -> None:
    try:
        driver.send(line)
    except OSError:  # the ssh client is gone: say why, from its exit status and stderr
        driver.proc.wait(timeout=10)
        err = driver.proc.stderr.read().decode(errors="replace").strip()
        raise NativeError(f"{driver.name}: the ssh session ended mid-run "
                          f"(exit {driver.proc.returncode}){': ' + err if err else ''}") from None


def _expect(driver: NativeProcess, event: str, timeout: float) -> dict:
    """The next line, which must be `event`; anything else ends the run with the driver's own
    account of what failed (its exit status and the failing tool's stderr)."""
    got = driver.read_event(timeout)
    if got.get("event") == event:
        return got
    # End of input makes the board stop everything; the driver's exit says why it failed.
    driver.finish(timeout=60.0)
    raise NativeError(f"{driver.name}: expected a {event!r} line, got {got}")
