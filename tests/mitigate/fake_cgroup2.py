"""A pure cgroup v2 host in a temporary directory, for the v2 controller path this machine
(hybrid: v2 without controllers) cannot exercise.

`FakeCgroup2` is a CgroupIO that keeps the kernel's rules intercore depends on, with the errno
the kernel returns: interface files exist only where the kernel creates them (a controller's
files appear in a child only when the parent enables it in cgroup.subtree_control), a file
that does not exist cannot be created (EACCES, as kernfs), a controller can be enabled only if
the parent delegates it (ENOENT), a group with processes cannot enable controllers and a group
that enabled controllers cannot take processes ("no internal processes", EBUSY), rmdir refuses
populated groups and groups with children (EBUSY), a process lives in exactly one group.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from intercore.base.parse import parse_cpu_list
from intercore.mitigate.cgroupfs import CgroupIO

MOUNT = "sys/fs/cgroup"
CORE_FILES = {"cgroup.procs": "", "cgroup.freeze": "0", "cgroup.events": "populated 0\nfrozen 0",
              "cgroup.subtree_control": "", "cgroup.type": "domain",
              "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0"}
CONTROLLER_FILES = {"cpu": {"cpu.weight": "100", "cpu.max": "max 100000"},
                    "cpuset": {"cpuset.cpus": "", "cpuset.mems": "",
                               "cpuset.cpus.effective": ""}}


def _fail(code: int, path: Path) -> OSError:
    return OSError(code, os.strerror(code), str(path))


class FakeCgroup2(CgroupIO):
    def __init__(self, fs_root: Path, *, available=("cpuset", "cpu", "io", "memory", "pids"),
                 delegated=("cpuset", "cpu"), pids=(1, 4242, 4243), cpus="0-3"):
        self.fs_root = fs_root
        self.marks = {}
        self.mount = fs_root / MOUNT
        self.mount.mkdir(parents=True)
        self.cpus = cpus
        proc = fs_root / "proc"
        (proc / "sys/kernel").mkdir(parents=True)
        (proc / "mounts").write_text(f"cgroup2 /{MOUNT} cgroup2 rw,nosuid,nodev,noexec 0 0\n")
        (proc / "sys/kernel/osrelease").write_text("6.6.0-board\n")
        root = self.mount
        (root / "cgroup.controllers").write_text(" ".join(available))
        (root / "cgroup.subtree_control").write_text(" ".join(delegated))
        (root / "cgroup.procs").write_text("\n".join(map(str, pids)))
        (root / "cpu.stat").write_text(CORE_FILES["cpu.stat"])
        (root / "cpuset.cpus.effective").write_text(cpus)

    # ---- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _words(path: Path) -> list[str]:
        return path.read_text().split() if path.exists() else []

    def _groups(self) -> list[Path]:
        return [self.mount, *(p for p in self.mount.rglob("*") if p.is_dir())]

    # ---- the CgroupIO interface ----------------------------------------------------------------

    def mkdir(self, path: Path) -> None:
        os.mkdir(path)
        files = dict(CORE_FILES)
        enabled = self._words(path.parent / "cgroup.subtree_control")
        files["cgroup.controllers"] = " ".join(enabled)
        for controller in enabled:
            files.update(CONTROLLER_FILES.get(controller, {}))
        for name, text in files.items():
            (path / name).write_text(text)

    def rmdir(self, path: Path) -> None:
        if path == self.mount:
            raise _fail(errno.EBUSY, path)
        if self._words(path / "cgroup.procs") or any(p.is_dir() for p in path.iterdir()):
            raise _fail(errno.EBUSY, path)
        shutil.rmtree(path)
        self.marks = {k: v for k, v in self.marks.items() if k[0] != path}

    # Extended attributes in memory: trusted.* on the test's own files would need root.
    marks: dict[tuple[Path, str], str]

    def set_mark(self, path: Path, name: str, value: str) -> None:
        if not path.is_dir():
            raise _fail(errno.ENOENT, path)
        self.marks[(path, name)] = value

    def mark(self, path: Path, name: str) -> str | None:
        return self.marks.get((path, name))

    def write(self, path: Path, text: str) -> None:
        if not path.is_file():
            raise _fail(errno.EACCES, path)
        group, name = path.parent, path.name
        handler = getattr(self, "_write_" + name.replace(".", "_"), None)
        if handler is not None:
            handler(group, text.strip())
        elif name in ("cgroup.controllers", "cgroup.events", "cpu.stat",
                      "cpuset.cpus.effective"):
            raise _fail(errno.EACCES, path)  # read-only in the kernel
        else:
            path.write_text(text)

    # ---- files with rules ----------------------------------------------------------------------

    def _write_cgroup_subtree_control(self, group: Path, text: str) -> None:
        available = self._words(group / "cgroup.controllers")
        enabled = self._words(group / "cgroup.subtree_control")
        for token in text.split():
            sign, controller = token[0], token[1:]
            if sign not in "+-" or controller not in available:
                raise _fail(errno.ENOENT, group / "cgroup.subtree_control")
            if group != self.mount and self._words(group / "cgroup.procs"):
                raise _fail(errno.EBUSY, group / "cgroup.subtree_control")
            if sign == "+" and controller not in enabled:
                enabled.append(controller)
            elif sign == "-" and controller in enabled:
                enabled.remove(controller)
        (group / "cgroup.subtree_control").write_text(" ".join(enabled))

    def _write_cgroup_procs(self, group: Path, text: str) -> None:
        pid = int(text)
        if group != self.mount and self._words(group / "cgroup.subtree_control"):
            raise _fail(errno.EBUSY, group / "cgroup.procs")
        owner = next((g for g in self._groups() if text in self._words(g / "cgroup.procs")),
                     None)
        if owner is None:
            raise _fail(errno.ESRCH, group / "cgroup.procs")
        for g, change in ((owner, lambda pids: [p for p in pids if p != text]),
                          (group, lambda pids: [*pids, str(pid)])):
            (g / "cgroup.procs").write_text("\n".join(change(self._words(g / "cgroup.procs"))))
            populated = bool(self._words(g / "cgroup.procs"))
            if g != self.mount:
                frozen = (g / "cgroup.freeze").read_text().strip()
                (g / "cgroup.events").write_text(f"populated {int(populated)}\nfrozen {frozen}")

    def _write_cgroup_freeze(self, group: Path, text: str) -> None:
        if text not in ("0", "1"):
            raise _fail(errno.EINVAL, group / "cgroup.freeze")
        (group / "cgroup.freeze").write_text(text)
        populated = int(bool(self._words(group / "cgroup.procs")))
        (group / "cgroup.events").write_text(f"populated {populated}\nfrozen {text}")

    def _write_cpu_weight(self, group: Path, text: str) -> None:
        if not text.isdigit() or not 1 <= int(text) <= 10000:
            raise _fail(errno.ERANGE, group / "cpu.weight")
        (group / "cpu.weight").write_text(text)

    def _write_cpuset_cpus(self, group: Path, text: str) -> None:
        try:
            wanted = set(parse_cpu_list(text))
        except ValueError:
            raise _fail(errno.EINVAL, group / "cpuset.cpus") from None
        if not wanted <= set(parse_cpu_list(self.cpus)):
            raise _fail(errno.EINVAL, group / "cpuset.cpus")
        (group / "cpuset.cpus").write_text(text)
        (group / "cpuset.cpus.effective").write_text(text or self.cpus)

    def pids_of(self, group: Path) -> list[int]:
        return [int(p) for p in self._words(group / "cgroup.procs")]
