"""The ssh executor against a real sshd on 127.0.0.1: the board is this machine, reached the
way a board is (keys, known_hosts, a pushed copy of the binaries, a remote driver)."""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from _sshd import loopback_sshd, sshd_binary

from intercore.campaign.executors import executor_for
from intercore.campaign.executors.base import GroupRequest, RunRequest
from intercore.campaign.executors.local import BINARIES, LocalExecutor, file_sha256
from intercore.campaign.executors.ssh import SshExecutor, SshTarget
from intercore.campaign.executors.ssh.executor import board_schedule, bytes_total
from intercore.base.errors import HostUnsupported, InputError, NativeError
from intercore.host.report import fingerprint
from intercore.host.topology import read_topology
from intercore.base.native import tool

ENGINE = ("bw:op=write,size=256K",)
VICTIM = ("ptrchase", ("size=64K",))
# 2e10 dependent loads: half a minute at the very least on any CPU, so a board cleaned up
# within CLEANUP_S was cleaned up by the watcher, not at the end of the repetition.
ENDLESS = ("ptrchase", ("size=64K", "accesses=20000000000"))
CLEANUP_S = 10.0


# ---- pure parts --------------------------------------------------------------------------------

def _order(samples) -> list[tuple[int, str]]:
    """(pair, condition) of each measured repetition, in the order the victim ran them."""
    return [(s.pair, s.condition) for s in sorted((s for s in samples if s.region == 0),
                                                  key=lambda s: s.rep)]


def test_bytes_total_joins_the_halves_of_each_counter():
    assert bytes_total([5, 1, 7, 0]) == 5 + (1 << 32) + 7
    assert bytes_total([]) == 0


def test_external_commands_are_refused_before_connecting():
    ex = SshExecutor(SshTarget.from_mapping({"host": "board.invalid"}))
    with pytest.raises(InputError, match="cmd:"):
        ex.plan(RunRequest("ptrchase", engine=("bw:op=read+cmd:stress-ng --cpu 1",)))


# ---- against a real sshd -----------------------------------------------------------------------

@pytest.fixture
def sshd(tmp_path):
    binary = sshd_binary()
    if binary is None:
        pytest.skip("sshd is not installed (apt-get install openssh-server); "
                    "the ssh executor needs a server to test against")
    with loopback_sshd(tmp_path, binary, private_shm=True) as server:
        yield server


def remote_processes(tmp_path: Path) -> list[tuple[int, str]]:
    """Processes running a binary from the board's copy (the conftest only watches ours)."""
    board_bin = (tmp_path / "board" / "bin").resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                exe = Path(os.readlink(entry / "exe"))
            except OSError:
                continue
            if exe.parent == board_bin:
                found.append((int(entry.name), exe.name))
    return found


def scratch_dirs(sshd) -> set[str]:
    """The board driver's scratch directories: in this test's private /dev/shm when it runs
    as root, where nothing but its own can appear (so `<= before` means none is left)."""
    return {p.name for p in sshd.shm.glob("intercore.*")} if sshd.shm.is_dir() else set()


def in_long_repetition(tmp_path: Path) -> bool:
    """The board's aggressor runs and its victim has spent half a second in a repetition."""
    procs = {name: pid for pid, name in remote_processes(tmp_path)}
    if set(procs) != set(BINARIES):
        return False
    try:
        fields = Path(f"/proc/{procs['ic-victim']}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return cpu_s > 0.5


def wait_gone(tmp_path: Path, timeout: float = CLEANUP_S) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while (left := remote_processes(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.slow
def test_paired_run_over_ssh_pushes_once_and_leaves_nothing(sshd, tmp_path):
    scratch_before = scratch_dirs(sshd)
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path)))
    try:
        desc = ex.describe()
        # The board's sysfs, copied over ssh, reads as this host's own.
        topo = read_topology()
        assert desc["fingerprint"] == fingerprint(topo, platform.release())
        assert desc["ncpus"] == len(topo.online_cpus) and desc["kernel"] == platform.release()
        assert desc["binaries"] == {n: file_sha256(tool(n)) for n in BINARIES}
        assert ex.pushed == []  # describing pushes nothing

        request = RunRequest(VICTIM[0], VICTIM[1], engine=ENGINE, reps=4, seed=3)
        out = ex.run(request)
        assert sorted(ex.pushed) == sorted(BINARIES)
        for name in BINARIES:
            assert file_sha256(tmp_path / "board" / "bin" / name) == desc["binaries"][name]

        total = [s for s in out.samples if s.region == 0]
        assert len(total) == 8 and all(s.victim == 0 for s in out.samples)
        # One pair schedule: the board ran exactly the order this host's harness runs.
        plan = ex.plan(request)
        assert _order(out.samples) == [(r.pair, r.condition) for r in board_schedule(plan)]
        assert _order(out.samples) == _order(LocalExecutor().run(request).samples)
        for s in total:
            assert s.wall_ns > 0 and s.cpu_ns > 0
            assert s.aggressor_set == ("" if s.condition == "iso" else ENGINE[0])
            assert ("aggressor_bytes" in s.counters) == (s.condition == "int")
        # The writer ran during the int repetitions (read from its control block remotely);
        # one short repetition alone may miss a publication on a busy host.
        assert sum(s.counters["aggressor_bytes"] for s in total if s.condition == "int") > 0
        assert {s.region_name for s in out.samples} >= {"total", "ptrchase.walk"}

        victim, aggressor = out.workloads
        assert (victim.role, victim.kind) == ("victim", "ptrchase")
        assert victim.params["ready"]["sync"] is True and victim.stats["event"] == "end"
        assert (aggressor.role, aggressor.kind) == ("aggressor", "bw")
        assert aggressor.stats["event"] == "stats" and aggressor.stats["paused_s"] > 0
        # Same request, same shape as the local executor's (the plan is the same code).
        local_plan = LocalExecutor(topo).plan(request)
        assert victim.cpu == local_plan.victim_cpu and victim.name == local_plan.victim.label

        ex.run(request)  # same session: nothing pushed again
        assert sorted(ex.pushed) == sorted(BINARIES)
    finally:
        ex.close()
    again = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path)))
    try:
        solo = again.run(RunRequest(VICTIM[0], VICTIM[1], reps=3, seed=1))
        assert again.pushed == []  # a new session finds the board's copies current
    finally:
        again.close()
    solo_total = [s for s in solo.samples if s.region == 0]
    assert solo_total and all(s.condition == "iso" and s.aggressor_set == "" for s in solo_total)
    assert len({s.pair for s in solo_total}) == len(solo_total)
    assert len(solo.workloads) == 1
    assert remote_processes(tmp_path) == []
    assert scratch_dirs(sshd) <= scratch_before


GROUP = ("solo", "w256", "r64")
GROUP_ENGINES = ((), ENGINE, ("bw:op=read,size=64K",))


def _group(seed: int = 4) -> GroupRequest:
    return GroupRequest(GROUP, tuple(RunRequest(VICTIM[0], VICTIM[1], engine=e, reps=4, seed=seed)
                                     for e in GROUP_ENGINES), seed, canary=False, block_pairs=2)


def _set_order(outputs) -> list[tuple[int, str, str]]:
    """(pair, condition, setup) of every measured repetition of a group, in run order."""
    rows = [(s.rep, s.pair, s.condition, name) for name, out in outputs.items()
            for s in out.samples if s.region == 0]
    return [r[1:] for r in sorted(rows)]


@pytest.mark.slow
def test_a_group_is_interleaved_on_the_board_as_on_this_host(sshd, tmp_path):
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path)))
    try:
        remote = ex.run_group(_group())
    finally:
        ex.close()
    local = LocalExecutor().run_group(_group())
    assert set(remote) == set(GROUP)
    # The board ran the sets in the blocks and order this host's harness runs them.
    assert _set_order(remote) == _set_order(local)
    order = _set_order(remote)
    runs = [name for i, (_, _, name) in enumerate(order) if i == 0 or order[i - 1][2] != name]
    assert len(runs) > len(GROUP)  # the sets took turns, more than one block each
    solo = [s for s in remote["solo"].samples if s.region == 0]
    assert len(solo) == 4 and all(s.condition == "iso" for s in solo)
    assert len(remote["solo"].workloads) == 1
    for name, engine in zip(GROUP[1:], GROUP_ENGINES[1:]):
        total = [s for s in remote[name].samples if s.region == 0]
        assert sorted(s.condition for s in total) == ["int"] * 4 + ["iso"] * 4
        assert {s.aggressor_set for s in total if s.condition == "int"} == {engine[0]}
        assert sum(s.counters["aggressor_bytes"] for s in total if s.condition == "int") > 0
        victim, aggressor = remote[name].workloads
        assert aggressor.stats["event"] == "stats" and aggressor.name == engine[0]
        assert {b["aggressor_set"] for b in remote[name].design["blocks"]} == {engine[0]}
    assert remote_processes(tmp_path) == []


def test_executor_for_an_ssh_plan_reaches_the_board(sshd, tmp_path):
    plan = SimpleNamespace(executor="ssh", ssh=sshd.target(tmp_path))
    ex = executor_for(plan)
    try:
        assert isinstance(ex, SshExecutor) and ex.describe()["executor"] == "ssh"
    finally:
        ex.close()


@pytest.mark.slow
def test_a_usage_error_on_the_board_is_an_input_error(sshd, tmp_path):
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path)))
    try:
        # Python's grammar takes any size; the board's ic-aggr checks its range (exit 2).
        with pytest.raises(InputError, match="aggressor 0: ic-aggr: --size"):
            ex.run(RunRequest(VICTIM[0], VICTIM[1], engine=("bw:op=write,size=1K",), reps=1))
    finally:
        ex.close()
    assert wait_gone(tmp_path) == []


def test_a_busybox_board_runs_the_same_protocol(tmp_path):
    """Buildroot and Yocto boards have BusyBox's ash and applets, not dash and coreutils."""
    binary, busybox = sshd_binary(), shutil.which("busybox")
    if binary is None or busybox is None:
        pytest.skip("needs sshd and busybox (apt-get install openssh-server busybox)")
    applets = tmp_path / "busybox-bin"
    applets.mkdir()
    subprocess.run([busybox, "--install", "-s", str(applets)], check=True)
    # The sessions' PATH holds nothing but BusyBox: sh, od, grep, mktemp ... are all its own.
    with loopback_sshd(tmp_path, binary, (f"SetEnv PATH={applets}",)) as server:
        ex = SshExecutor(SshTarget.from_mapping(server.target(tmp_path)))
        try:
            out = ex.run(RunRequest(VICTIM[0], VICTIM[1], engine=ENGINE, reps=3, seed=5))
        finally:
            ex.close()
    local = LocalExecutor().run(RunRequest(VICTIM[0], VICTIM[1], engine=ENGINE, reps=3, seed=5))
    assert _order(out.samples) == _order(local.samples)
    assert out.workloads[1].stats["event"] == "stats"
    assert remote_processes(tmp_path) == []


def test_unknown_host_key_is_refused_unless_accepted(sshd, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path, known_hosts=str(empty))))
    with pytest.raises(InputError, match="host key not trusted.*accept_new_host_key"):
        ex.describe()
    ex.close()
    assert empty.read_text() == ""

    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path, known_hosts=str(empty),
                                                         accept_new_host_key=True)))
    try:
        assert ex.describe()["hostname"]
    finally:
        ex.close()
    assert f"[127.0.0.1]:{sshd.port}" in empty.read_text()  # remembered on first use


def test_changed_host_key_is_refused_even_when_accepting_new_keys(sshd, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                   check=True, stdin=subprocess.DEVNULL)
    kind, key = other.with_suffix(".pub").read_text().split()[:2]
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {kind} {key}\n")
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path, known_hosts=str(wrong),
                                                         accept_new_host_key=True)))
    with pytest.raises(InputError, match="host key not trusted"):
        ex.describe()
    ex.close()


def test_binaries_for_another_architecture_are_refused_before_pushing(sshd, tmp_path):
    foreign = tmp_path / "build-arm" / "bin"
    foreign.mkdir(parents=True)
    here = platform.machine()
    # A real build of ours with its ELF machine field saying AArch64 (x86-64 on an Arm host):
    # exactly what the executor reads to decide.
    other = (62).to_bytes(2, "little") if here.startswith(("aarch64", "arm")) \
        else (183).to_bytes(2, "little")
    for name in BINARIES:
        data = bytearray(tool(name).read_bytes())
        data[18:20] = other
        (foreign / name).write_bytes(bytes(data))
        (foreign / name).chmod(0o755)
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path, bin_dir=str(foreign))))
    with pytest.raises(HostUnsupported, match=rf"runs {here}, but .*bin_dir") as err:
        ex.run(RunRequest(VICTIM[0], VICTIM[1], engine=ENGINE, reps=2))
    ex.close()
    assert "cmake -S native" in str(err.value)
    assert not (tmp_path / "board").exists()  # nothing was pushed


def _driver_clients() -> list[int]:
    """Our ssh client processes carrying a remote driver session."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and b"ic-driver" in cmdline:
            found.append(int(entry.name))
    return found


def _wait_for(predicate, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (got := predicate()):
            return got
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_killing_the_ssh_client_mid_run_kills_everything_on_the_board(sshd, tmp_path):
    scratch_before = scratch_dirs(sshd)
    ex = SshExecutor(SshTarget.from_mapping(sshd.target(tmp_path)))
    ex.describe()  # the master belongs to this (long-lived) thread
    errors: list[BaseException] = []

    def run() -> None:
        try:
            ex.run(RunRequest(ENDLESS[0], ENDLESS[1], engine=ENGINE, reps=2))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        _wait_for(lambda: in_long_repetition(tmp_path))
        assert scratch_dirs(sshd) - scratch_before  # where the board keeps it: looked at below
        (client,) = _driver_clients()
        os.kill(client, signal.SIGKILL)
        worker.join(timeout=60)
        assert not worker.is_alive()
        assert errors and isinstance(errors[0], NativeError)
        assert wait_gone(tmp_path) == []
        _wait_for(lambda: scratch_dirs(sshd) <= scratch_before, timeout=CLEANUP_S)
        # The connection survives: the next run works.
        out = ex.run(RunRequest(VICTIM[0], VICTIM[1], engine=ENGINE, reps=2))
        assert len([s for s in out.samples if s.region == 0]) == 4
    finally:
        ex.close()


_RUNNER = """
import sys
from intercore.campaign.executors import executor_for
from intercore.campaign.executors.base import GroupRequest, RunRequest
from intercore.campaign.spec import Executor as CampaignExecutor
from intercore.campaign.executors.ssh import SshExecutor, SshTarget
ex = SshExecutor(SshTarget.from_mapping(eval(sys.argv[1])))
ex.run(RunRequest(*eval(sys.argv[2]), engine=eval(sys.argv[3]), reps=2))
"""


@pytest.mark.slow
def test_kill_9_of_the_runner_kills_everything_on_the_board(sshd, tmp_path):
    scratch_before = scratch_dirs(sshd)
    # The runner's control-socket directory goes in a directory of this test's (short: a
    # socket path has a length limit), the only place it may clean up after the kill.
    sockets = Path(tempfile.mkdtemp(prefix="ic-t-"))
    runner = subprocess.Popen([sys.executable, "-c", _RUNNER, repr(sshd.target(tmp_path)),
                               repr(ENDLESS), repr(ENGINE)], stderr=subprocess.PIPE,
                              env={**os.environ, "TMPDIR": str(sockets)})
    try:
        _wait_for(lambda: in_long_repetition(tmp_path) or runner.poll() is not None)
        assert runner.poll() is None, runner.stderr.read().decode()
        assert scratch_dirs(sshd) - scratch_before  # where the board keeps it: looked at below
        assert list(sockets.glob("ic-ssh-*"))  # and the runner its control socket
        runner.kill()
        runner.wait()
        assert wait_gone(tmp_path) == []
        _wait_for(lambda: scratch_dirs(sshd) <= scratch_before, timeout=CLEANUP_S)
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit()
                and _is_ssh_for(p, sshd.port)]
        assert left == []  # the master and the session client died with the runner
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        # The killed runner could not remove its control-socket directory; it is ours to.
        shutil.rmtree(sockets, ignore_errors=True)


def _is_ssh_for(proc: Path, port: int) -> bool:
    try:
        cmd = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmd) and Path(cmd[0].decode(errors="replace")).name == "ssh" \
        and str(port).encode() in cmd

