"""The `intercore` command (console script and `python -m intercore`).

The stop handlers go in before the command line is imported: importing it takes about a
second (matplotlib, pydantic, rich), and a Ctrl-C or SIGTERM in that second must stop the
command as one later would, with one line and status 130 / 143, not a traceback from
whichever import it landed in, nor death by the signal itself.
"""

from __future__ import annotations


from .base import stopping


def main() -> None:
    stopping.install()
    try:
        from .cli.main import command

        command()(prog_name="intercore")
    except BaseException as exc:
        signum = stopping.stop_in(exc)
        if signum is None or _finished(exc):
            raise
        # Whatever a stop ended in (the command's own cleanup failing after it, an error from
        # a child the same Ctrl-C killed), the stop is what happened.
        stopping.exit_now(signum)


def _finished(exc: BaseException) -> bool:
    """The command ended normally (status 0) despite a stop, as the monitor does when it is
    told to stop: its status stands."""
    return isinstance(exc, SystemExit) and exc.code in (0, None)


if __name__ == "__main__":
    main()
