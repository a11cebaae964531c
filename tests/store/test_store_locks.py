"""One measuring process per store, however the store is named (symlink, hard link, `..`),
and a lock that a planted link cannot turn against root (issue 18).

The campaign runner and `learn dataset` take the same lock (intercore.base.locks); both are
driven here through their own module, as they call it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from intercore.campaign import runner
from intercore.base.errors import InputError
from intercore.learn import generate
from intercore.store import Store


def test_a_symlink_to_the_store_finds_the_same_lock(tmp_path):
    store = tmp_path / "lab.db"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "link.db"
    link.symlink_to(store)
    with runner.exclusive(store):
        with pytest.raises(InputError, match="in use"):
            with runner.exclusive(link):
                pass
        with pytest.raises(InputError, match="in use"):
            with runner.exclusive(tmp_path / "elsewhere" / ".." / "lab.db"):
                pass
    with runner.exclusive(link):  # released with its holder
        pass


@pytest.mark.parametrize("first, then", [(generate.exclusive, generate.exclusive),
                                         (runner.exclusive, generate.exclusive),
                                         (generate.exclusive, runner.exclusive)],
                         ids=["dataset-dataset", "campaign-dataset", "dataset-campaign"])
def test_learn_datasets_and_campaigns_share_the_lock_through_a_symlinked_store(
        tmp_path, first, then):
    store = tmp_path / "lab.db"
    link = tmp_path / "link.db"
    link.symlink_to(store)
    with first(store):
        with pytest.raises(InputError, match="in use"):
            with then(link):
                pass


def test_a_hard_link_to_the_store_finds_the_same_lock(tmp_path):
    store = tmp_path / "lab.db"
    Store.open(store).close()
    (tmp_path / "other").mkdir()
    linked = tmp_path / "other" / "lab.db"
    os.link(store, linked)
    with runner.exclusive(store):
        with pytest.raises(InputError, match="in use"):
            with runner.exclusive(linked):
                pass
        with pytest.raises(InputError, match="in use"):
            with generate.exclusive(linked):
                pass


HOLDER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from intercore.campaign import runner
    with runner.exclusive(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.read()
""")


def test_two_writers_through_two_names_of_one_store(tmp_path):
    """Two processes, as two campaigns would be: the second, through a hard link, is refused
    and told who holds the store; the kernel drops the lock when the holder is killed."""
    store = tmp_path / "lab.db"
    linked = tmp_path / "linked.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        os.link(store, linked)
        with pytest.raises(InputError, match=rf"in use \(pid {holder.pid}: "):
            with runner.exclusive(linked):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with runner.exclusive(linked):
        pass


def test_a_second_name_for_a_store_is_refused_by_every_writer(tmp_path):
    """SQLite keeps one write-ahead log per name: two names, two logs, and a checkpoint of one
    overwrote the other's rows. A store with a second hard link is refused at open."""
    store = tmp_path / "lab.db"
    Store.open(store).close()
    linked = tmp_path / "linked.db"
    os.link(store, linked)
    for path in (store, linked):
        with pytest.raises(InputError, match="2 hard links"):
            Store.open(path)
        with pytest.raises(InputError, match="2 hard links"):
            Store.snapshot(path)
    os.unlink(linked)
    Store.open(store).close()


@pytest.mark.parametrize("lock", [runner.exclusive, generate.exclusive])
def test_a_planted_lock_file_link_is_never_followed(tmp_path, lock):
    """Old releases kept `<store>.campaign.lock` / `.learn.lock` beside the store: a link
    planted there made root truncate (or create) whatever it pointed to."""
    victim, missing = tmp_path / "victim", tmp_path / "created-by-root"
    victim.write_text("precious\n")
    for suffix, target in ((".campaign.lock", victim), (".learn.lock", missing)):
        (tmp_path / f"lab.db{suffix}").symlink_to(target)
    with lock(tmp_path / "lab.db"):
        pass
    assert victim.read_text() == "precious\n"
    assert not missing.exists()


def test_a_store_others_could_swap_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, not sticky: anyone may rename another file in
    with pytest.raises(InputError, match="not sticky"):
        with runner.exclusive(shared / "lab.db"):
            pass
    assert not (shared / "lab.db").exists()


def test_in_a_sticky_shared_directory_the_store_must_be_ours(tmp_path):
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    planted = sticky / "lab.db"
    planted.touch()
    os.chown(planted, 54321, 54321)  # left there by another user
    with pytest.raises(InputError, match="belongs to uid 54321"):
        with runner.exclusive(planted):
            pass
    os.chown(planted, os.geteuid(), os.getegid())
    with runner.exclusive(planted):
        pass


def test_the_lock_makes_no_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist|No such file"):
        with runner.exclusive(tmp_path / "missing" / "lab.db"):
            pass
    assert not (tmp_path / "missing").exists()
