"""The labgrid executor against a real labgrid lab on 127.0.0.1: a coordinator and an exporter
that exports this machine's sshd (a throwaway one) as the NetworkService of two places. A
campaign spreads over both boards, is killed midway, resumes, and every run is stored once
with the place it ran on; the places are released afterwards."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _labgrid import labgrid_tool, loopback_lab
from _sshd import loopback_sshd, sshd_binary

from intercore.campaign.spec import Executor
from intercore.host.topology import read_topology

PLACES = ("board-a", "board-b")
TAGS = {"board": "loopback"}
# 4 configurations x 2 tasks x 2 rounds, --quick: a few seconds of runs, enough to be killed
# in the middle. A round's setups of one task run as one interleaved group on one board, so
# the four groups keep both boards busy twice.
CAMPAIGN = {
    "name": "farm", "repetitions": 10, "rounds": 2, "seed": 5,
    "guests": {"crit": {"kind": "critical", "tasks": [
        {"name": "chase", "victim": "ptrchase:size=256K"},
        {"name": "short", "victim": "ptrchase:size=128K"}]},
               "engine": {"kind": "engine"}},
    "generators": {"engine": {"sizes": ["64KiB", "256KiB", "1MiB"], "ops": ["write"]}},
}
TOTAL_RUNS = 16
GROUP_RUNS = 4


def test_the_executor_section_names_one_place_or_tags():
    assert Executor.model_validate({"kind": "labgrid", "tags": TAGS}).labgrid()["tags"] == TAGS
    assert Executor.model_validate({"kind": "labgrid", "place": "a"}).labgrid()["place"] == "a"
    for bad, why in (({"kind": "labgrid"}, "a place or tags"),
                     ({"kind": "labgrid", "place": "a", "tags": TAGS}, "a place or tags"),
                     ({"kind": "labgrid", "tags": TAGS, "host": "x"}, "NetworkService"),
                     ({"kind": "ssh", "host": "x", "tags": TAGS}, "labgrid executor"),
                     ({"kind": "local", "place": "a"}, "belong to")):
        with pytest.raises(ValueError, match=why):
            Executor.model_validate(bad)
    # A labgrid board's address comes from its place; the ssh settings are passed on.
    ssh = Executor.model_validate({"kind": "labgrid", "tags": TAGS, "identity": "k"}).ssh()
    assert "host" not in ssh and ssh["identity"] == "k"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One lab for the module: each test leaves every place released (and checks it)."""
    tmp_path = tmp_path_factory.mktemp("lab")
    sshd, coordinator = sshd_binary(), labgrid_tool("labgrid-coordinator")
    if sshd is None or coordinator is None:
        pytest.skip("needs sshd and labgrid (apt-get install openssh-server; "
                    "pip install 'intercore[lab]')")
    if len(read_topology().online_cpus) < 2:
        pytest.skip("needs two online CPUs (victim + engine)")
    with loopback_sshd(tmp_path, sshd) as server:
        services = {p: {"address": "127.0.0.1", "port": server.port, "username": server.user}
                    for p in PLACES}
        with loopback_lab(tmp_path, services, TAGS) as lab:
            yield lab, server


def campaign_file(tmp_path: Path, lab, server) -> Path:
    doc = dict(CAMPAIGN)
    doc["executor"] = {"kind": "labgrid", "coordinator": lab.address, "tags": TAGS,
                       "identity": str(server.client_key), "known_hosts": str(server.known_hosts),
                       "config": str(server.empty_config), "workdir": str(tmp_path / "board"),
                       "wait": 60}
    path = tmp_path / "farm.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def intercore(*args: str) -> list[str]:
    return [sys.executable, "-m", "intercore", *args]


def recorded(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM campaign_runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def board_processes(workdir: Path) -> list[int]:
    """Processes running a binary of the boards' copy (the conftest only watches ours)."""
    bin_dir = (workdir / "bin").resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "exe")).parent == bin_dir:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def acquired(lab) -> dict[str, str]:
    """place -> holder, for the places someone holds."""
    out = lab.client("who").stdout.splitlines()[1:]  # header: User Host Place Changed
    return {fields[2]: f"{fields[1]}/{fields[0]}" for fields in map(str.split, out) if fields}


@pytest.mark.slow
def test_a_campaign_spreads_over_two_places_survives_a_kill_and_releases_them(lab, tmp_path):
    lab, server = lab
    path, db = campaign_file(tmp_path, lab, server), tmp_path / "farm.db"
    proc = subprocess.Popen(intercore("measure", "campaign", "run", str(path), "--quick",
                                      "--no-canary",
                                      "--db", str(db)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while recorded(db) < 2:
            assert proc.poll() is None, f"ended before it could be killed: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no two runs after 180 s"
            time.sleep(0.02)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed_at = recorded(db)
    assert 2 <= killed_at < TOTAL_RUNS and killed_at % GROUP_RUNS == 0  # whole groups only
    # The killed run could not give its places back.
    held = acquired(lab)
    assert set(held) == set(PLACES)
    assert all("+intercore.farm" in who for who in held.values())

    resumed = subprocess.run(intercore("measure", "campaign", "resume", "farm", "--no-canary",
                                       "--db", str(db), "--json"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert (out["already"], out["done"], out["complete"]) == (killed_at, TOTAL_RUNS - killed_at,
                                                             True)
    assert any("took over place" in w for w in out["warnings"])

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT c.round, c.setup, i.started_at, i.finished_at, "
                            "i.params_json FROM campaign_runs c "
                            "JOIN invocations i ON i.id = c.invocation_id").fetchall()
        schedule = json.loads(conn.execute("SELECT schedule_json FROM campaigns").fetchone()[0])
        orphans = conn.execute("SELECT COUNT(*) FROM invocations WHERE id NOT IN (SELECT "
                               "invocation_id FROM campaign_runs)").fetchone()[0]
        hosts = conn.execute("SELECT COUNT(*) FROM hosts").fetchone()[0]
    assert sorted((r, s) for r, s, *_ in rows) == sorted(map(tuple, schedule))  # once each
    assert orphans == 0 and hosts == 1  # one board kind: one host row
    boards = [json.loads(p)["board"] for *_, p in rows]
    assert {b["place"] for b in boards} == set(PLACES)
    # The two boards measured at the same time: some runs on different places overlap.
    spans = [(json.loads(p)["board"]["place"], start, end) for _, _, start, end, p in rows]
    assert any(a != b and s1 < e2 and s2 < e1
               for a, s1, e1 in spans for b, s2, e2 in spans)
    for b in boards:
        assert b["address"] == "127.0.0.1" and b["port"] == server.port and b["kernel"]
        assert {"serial", "model", "firmware", "hostname"} <= set(b)

    # Nothing held: no place, no reservation, no process on the boards.
    assert acquired(lab) == {}
    assert board_processes(tmp_path / "board") == []
    assert "Reservation" not in lab.client("reservations").stdout

    status = subprocess.run(intercore("measure", "campaign", "status", "farm", "--db", str(db),
                                      "--json"),
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    per_board = {b["place"]: b["done"] for b in json.loads(status.stdout)["boards"]}
    assert set(per_board) == set(PLACES) and sum(per_board.values()) == TOTAL_RUNS

    # The report puts the two boards side by side, a group of columns each.
    report = subprocess.run(intercore("measure", "campaign", "report", "farm", "--db", str(db),
                                      "-o",
                                      str(tmp_path / "farm.html")),
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    side = (tmp_path / "farm.html").read_text().split('<section id="hosts-side-by-side">')[1]
    header = side.split("</thead>")[0]
    assert all(f"<th>{p}: slowdown [95% CI]</th>" in header for p in PLACES)


@pytest.mark.slow
def test_a_place_that_does_not_exist_is_an_input_error(lab, tmp_path):
    lab, server = lab
    path = campaign_file(tmp_path, lab, server)
    doc = yaml.safe_load(path.read_text())
    doc["executor"].pop("tags")
    doc["executor"]["place"] = "board-z"
    path.write_text(yaml.safe_dump(doc))
    done = subprocess.run(intercore("measure", "campaign", "run", str(path), "--quick",
                                    "--no-canary",
                                    "--db", str(tmp_path / "x.db")),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "no place 'board-z'" in done.stderr and "board-a" in done.stderr
    assert acquired(lab) == {}


@pytest.mark.slow
def test_killing_the_runner_with_sigterm_releases_the_places(lab, tmp_path):
    lab, server = lab
    path, db = campaign_file(tmp_path, lab, server), tmp_path / "farm.db"
    proc = subprocess.Popen(intercore("measure", "campaign", "run", str(path), "--quick",
                                      "--no-canary",
                                      "--db", str(db)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while recorded(db) < 1:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM
    assert acquired(lab) == {}
    assert "Reservation" not in lab.client("reservations").stdout
