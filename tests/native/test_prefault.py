"""The prefaults in ic-periodic (its job records) and ic-monitor (its latency samples) really
fault the pages in: a memset of calloc's zeroes is a dead store GCC drops at -O2, which left
those arrays untouched until a job or a freeze first wrote to them. Checked in the running
binaries, from /proc/PID/smaps: the array's mapping is resident in full before anything is
timed."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from intercore.base.native import tool

KIB = 1024


def anonymous_mappings(pid: int) -> list[tuple[int, int]]:
    """(Size, Rss) in bytes of every anonymous private mapping of the process."""
    found, header = [], None
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            if header is not None and len(header.split()) == 5:
                found.append((fields.get("Size", 0), fields.get("Rss", 0)))
            header, fields = line, {}
        elif ":" in line and line.split()[-1] == "kB":
            key, value = line.split(":")[0], int(line.split()[1]) * KIB
            fields[key] = value
    if header is not None and len(header.split()) == 5:
        found.append((fields.get("Size", 0), fields.get("Rss", 0)))
    return found


def resident(pid: int, at_least: int) -> list[tuple[int, int]]:
    """The anonymous mappings of at least `at_least` bytes."""
    return [(size, rss) for size, rss in anonymous_mappings(pid) if size >= at_least]


def test_periodic_job_records_are_resident_before_the_first_release():
    jobs = 300_000  # 48 bytes each: 14.4 MB, its own mapping, all of it prefaulted
    proc = subprocess.Popen([str(tool("ic-periodic")), "--jobs", str(jobs), "--start-at", "stdin",
                             "victim", "qsort", "--count", "1K"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["event"] == "ready"
        big = resident(proc.pid, 12 * 1024 * KIB)
        assert big, anonymous_mappings(proc.pid)
        assert all(rss >= size - 8 * KIB for size, rss in big), big
    finally:
        proc.communicate("quit\n", timeout=30)
    assert proc.returncode == 0


def test_a_very_long_run_starts_at_once_and_faults_its_records_in_as_it_goes():
    """10^7 jobs (the "until stopped" of stressors): the first 16 MiB of records up front, the
    rest a page at a time before the sleep that precedes its first job."""
    started = time.monotonic()
    proc = subprocess.Popen([str(tool("ic-periodic")), "--jobs", "10000000", "--start-at",
                             "stdin", "victim", "qsort", "--count", "1K"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["event"] == "ready"
        assert time.monotonic() - started < 2.0
        (size, rss), = resident(proc.pid, 400 * 1024 * KIB)
        assert 16 * 1024 * KIB <= rss < 64 * 1024 * KIB, (size, rss)
    finally:
        proc.communicate("quit\n", timeout=30)
    assert proc.returncode == 0


def test_monitor_latency_array_is_resident_before_the_ready_line(tmp_path):
    group = tmp_path / "g"
    group.mkdir()
    (group / "cgroup.freeze").write_text("0")
    (group / "cpu.stat").write_text("usage_usec 0\n")
    proc = subprocess.Popen([str(tool("ic-monitor")), "--policy", "poll", "--critical",
                             str(group), "--best-effort", str(group), "--duration", "10s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["event"] == "ready"
        big = resident(proc.pid, 2 * 1024 * KIB)  # 2^18 samples of 8 bytes
        assert big, anonymous_mappings(proc.pid)
        assert all(rss >= size - 8 * KIB for size, rss in big), big
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0
