"""The test servers' lifecycle (``tests/support/server_process.py``): a run that dies without
stopping its servers leaves them to the next run's sweep, and a run that exits stops its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import server_process

SUPPORT = Path(__file__).resolve().parent / "support"

#: a "test run" that starts a server and then dies without stopping it (``os._exit``: no atexit)
#: or exits normally; it prints the server's pid first
RUN = """
import os, sys, time
sys.path.insert(0, {support!r})
from pathlib import Path
from server_process import ServerProcess
server = ServerProcess("sleeper", [sys.executable, "-c", "import time; time.sleep(120)"], log=Path({log!r}))
server.start()
print(server.pid, flush=True)
if {die}:
    os._exit(1)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _run(tmp_path: Path, *, die: bool) -> int:
    code = RUN.format(support=str(SUPPORT), log=str(tmp_path / "sleeper.log"), die=die)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return int(done.stdout.split()[0])


def test_a_killed_runs_server_is_stopped_by_the_next_sweep(tmp_path: Path) -> None:
    pid = _run(tmp_path, die=True)
    try:
        assert _alive(pid), "the dead run's server should still be running before the sweep"
        stopped = server_process.sweep()
        assert f"sleeper (pid {pid})" in stopped
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
        assert not (server_process.PID_DIR / f"{pid}.pid").exists()
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_a_run_that_exits_stops_its_servers(tmp_path: Path) -> None:
    pid = _run(tmp_path, die=False)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert not (server_process.PID_DIR / f"{pid}.pid").exists()
