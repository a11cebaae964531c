"""The `ssh` executor: campaign runs on a remote Linux board, through the system OpenSSH client.

transport.py holds the campaign's `ssh:` section and the one multiplexed connection;
board.py probes the board and installs the binaries; executor.py drives a paired run there
with driver.sh, the POSIX shell script it runs on the board.
"""

from .executor import SshExecutor
from .transport import SshTarget

__all__ = ["SshExecutor", "SshTarget"]
