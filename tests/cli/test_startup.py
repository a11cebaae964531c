"""Every command pays for what the command-line module imports before it parses a single option.
The heavy libraries (matplotlib for figures, xdsl for the compiler's IR, jax for the learner)
are each needed by a few commands only: the tree must name its commands without them, or
`intercore --help` and every compile pay a second of start-up for nothing (bench/compile_time.py
measured it as a third of a 200-node compile)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("matplotlib", "xdsl", "jax", "sklearn", "scipy")


def test_the_command_tree_loads_no_heavy_library():
    probe = ("import json, sys; import intercore.cli.main; "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
             f"{set(HEAVY)!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []
