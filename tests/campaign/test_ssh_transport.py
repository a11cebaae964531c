"""The ssh transport: the campaign's ssh section, the host check and the ssh command lines."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from intercore.campaign.executors.ssh.transport import Connection, SshTarget
from intercore.campaign.spec import Executor as CampaignExecutor
from intercore.base.errors import InputError

HOSTILE = ("-oProxyCommand=touch /tmp/intercore-pwned", "-F/dev/null", "board name",
           "board\nProxyCommand x")


def test_target_section_is_checked():
    with pytest.raises(InputError, match="ssh.host"):
        SshTarget.from_mapping({"port": 22})
    with pytest.raises(InputError, match="unknown key"):
        SshTarget.from_mapping({"host": "board", "pasword": "x"})
    with pytest.raises(InputError, match="ssh.port"):
        SshTarget.from_mapping({"host": "board", "port": 70000})
    t = SshTarget.from_mapping({"host": "board", "user": "pi", "workdir": "~/ic"})
    assert (t.label, t.workdir, t.accept_new_host_key) == ("pi@board", "ic", False)
    # What a campaign file's executor section hands over.
    section = CampaignExecutor(kind="ssh", host="board", user="pi").ssh()
    assert SshTarget.from_mapping(section).label == "pi@board:22"


@pytest.mark.parametrize("host", HOSTILE)
def test_a_host_ssh_could_read_as_an_option_is_refused(host):
    with pytest.raises(InputError, match="ssh.host"):
        SshTarget.from_mapping({"host": host})
    with pytest.raises(ValidationError, match="host"):
        CampaignExecutor(kind="ssh", host=host)


def test_every_ssh_command_line_ends_its_options_with_a_double_dash(tmp_path):
    target = SshTarget.from_mapping({"host": "board", "user": "pi", "port": 2222,
                                     "identity": str(tmp_path / "key")})
    conn = Connection(target)
    try:
        argv = conn.argv("uname -a")
        end = argv.index("--")
        assert argv[0] == "ssh" and argv[end + 1:] == ["board", "uname -a"]
    finally:
        conn.close()


@pytest.mark.slow
def test_campaign_validate_refuses_an_option_as_host_with_exit_2(tmp_path):
    path = tmp_path / "hostile.yaml"
    path.write_text("name: hostile\n"
                    "executor: {kind: ssh, host: '-oProxyCommand=touch /tmp/intercore-pwned'}\n"
                    "guests:\n  crit: {kind: critical, tasks: [ptrchase]}\n")
    proc = subprocess.run([sys.executable, "-m", "intercore", "measure", "campaign", "validate",
                           str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:2: executor.host:" in " ".join(proc.stderr.split())
    assert "begins with '-'" in proc.stderr
