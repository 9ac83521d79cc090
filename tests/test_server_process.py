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


def test_two_processes_never_pick_the_same_port(tmp_path: Path) -> None:
    """300 ports picked by another process, then 300 here: no port twice (among ~16k ports, two
    independent draws of 300 would share about five), all below the kernel's ephemeral range."""
    picks = "import server_process as s; print(*(s.free_port() for _ in range(300)))"
    code = f"import sys; sys.path.insert(0, {str(SUPPORT)!r}); {picks}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    theirs = {int(p) for p in out.split()}
    ours = {server_process.free_port() for _ in range(300)}
    assert len(theirs) == len(ours) == 300
    assert not theirs & ours
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert max(theirs | ours) < ephemeral_low
