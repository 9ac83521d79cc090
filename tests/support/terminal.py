"""Starting a command as from a terminal, whatever the test runner's process inherited: a test run
started in the background by a shell has SIGINT ignored, and an ignored or blocked SIGINT passes
through fork and exec to the command under test, which would then never see a Ctrl-C."""

from __future__ import annotations

import sys

_EXEC_WITH_SIGINT = (
    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


def as_at_a_terminal(argv: list[str]) -> list[str]:
    """``argv`` run with SIGINT unblocked and at its default (Python then installs its own handler).

    >>> as_at_a_terminal(["/bin/true"])[-1]
    '/bin/true'
    """
    return [sys.executable, "-c", _EXEC_WITH_SIGINT, *argv]
