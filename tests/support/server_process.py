"""One server process of a test fixture: started in a process group of its own, stopped by PID, and
never outliving the test run — not even a run that was interrupted or killed.

Each started server leaves a pid file in a directory shared by all runs on the machine (``$TMPDIR/
mqbalance-test-servers``) naming the pytest process that owns it. :func:`sweep` (called when a
test session starts) stops every server whose owner is gone: a run killed with SIGKILL or cancelled
by CI leaves nothing behind for the next. Within a run, an ``atexit`` handler stops what the
fixtures did not (a Ctrl-C during a module's set-up, say).

Example:
    >>> import sys, tempfile
    >>> log = Path(tempfile.mkdtemp()) / "sleeper.log"
    >>> server = ServerProcess("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], log=log)
    >>> server.start()
    >>> server.alive()
    True
    >>> server.stop()
    -15
    >>> server.alive()
    False
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PID_DIR = Path(tempfile.gettempdir()) / "mqbalance-test-servers"

#: ports this process has handed out: a cluster picks all its ports before any of its servers
#: listens, so the OS may offer a port twice (a broker once got its name server's port)
_HANDED_OUT: set[int] = set()
#: the other test processes on the machine (xdist workers, a run beside this one) see a port picked
#: here as taken for this long, time enough for the slowest server to start listening on it
RESERVED_S = 600.0
PORT_DIR = Path(tempfile.gettempdir()) / "mqbalance-test-ports"
#: its own generator: a test that seeded :mod:`random` must not see its sequence move
_RNG = random.SystemRandom()


def _pick_range() -> range:
    """The ports tests pick from: below the kernel's ephemeral range, so no client's outgoing
    connection and no other program's ``bind(0)`` takes one between our pick and the listen."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return range(max(10_000, low // 2), low)


def _reserve(port: int) -> bool:
    """Claim ``port`` for this process across the machine (a file made with O_EXCL; one older than
    :data:`RESERVED_S` is stale and taken over), then check nothing listens on it."""
    if port in _HANDED_OUT:
        return False
    PORT_DIR.mkdir(exist_ok=True)
    claim = PORT_DIR / str(port)
    with contextlib.suppress(OSError):
        if time.time() - claim.stat().st_mtime > RESERVED_S:
            claim.unlink()
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    except OSError:
        return False
    _HANDED_OUT.add(port)
    return True


def free_port() -> int:
    """A TCP port free on 127.0.0.1 that no test process on this machine took in the last
    :data:`RESERVED_S` seconds, never one this process handed out before, and outside the kernel's
    ephemeral range. Every fixture (RocketMQ, Kafka, Spark, ZooKeeper, the tests' own listeners)
    takes its ports here.

    Example:
        >>> a, b = free_port(), free_port()
        >>> a != b and a in _pick_range() and b in _pick_range()
        True
    """
    ports = _pick_range()
    for _ in range(1000):
        port = _RNG.choice(ports)
        if _reserve(port):
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {ports.start}-{ports.stop - 1} after 1000 tries")


def free_port_pair() -> int:
    """A free port P with P-2 also free and reserved (a broker opens a second listener there, as Java's does)."""
    for _ in range(100):
        p = free_port()
        if _reserve(p - 2):
            return p
    raise RuntimeError("no free port pair on 127.0.0.1")


#: the processes this run started and has not stopped yet, by pid
_tracked: dict[int, subprocess.Popen[bytes]] = {}


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), to tell a reused PID apart."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


class ServerProcess:
    """A server started by a fixture; its output goes to ``log`` (kept for a failing test to show)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        pipes: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        #: ``pipes=True``: stdin and stdout are pipes (``proc.stdin``/``proc.stdout``) for a process that
        #: answers requests, and only stderr goes to the log
        self.pipes = pipes
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} was not started"
        return self.proc.pid

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE if self.pipes else out,
                stderr=out if self.pipes else subprocess.STDOUT,
                stdin=subprocess.PIPE if self.pipes else subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: stop() reaches whatever it forks
            )
        track(self.name, self.proc)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, *, timeout: float = 15.0, kill: bool = False) -> int | None:
        """Stop the server's process group (SIGTERM, then SIGKILL after ``timeout``; ``kill=True``
        sends SIGKILL at once) and return its exit status (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)
        # what the server forked may outlive it in the group
        _signal_group(self.proc.pid, signal.SIGKILL)
        untrack(self.proc)
        return self.proc.returncode

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"(no log at {self.log})"

    def __repr__(self) -> str:
        return f"ServerProcess({self.name!r}, pid={self.proc.pid if self.proc else None})"


def track(name: str, proc: subprocess.Popen[bytes]) -> None:
    """Leave a pid file for ``proc`` (a server this run started; best in a process group of its
    own, ``start_new_session=True``) so that :func:`sweep` stops it if the run dies, and stop it at
    this interpreter's exit if nobody did. :meth:`ServerProcess.start` calls it; fixtures that
    start servers themselves call it too, and :func:`untrack` once they stopped them."""
    PID_DIR.mkdir(parents=True, exist_ok=True)
    (PID_DIR / f"{proc.pid}.pid").write_text(
        f"{os.getpid()} {_start_time(os.getpid())} {_start_time(proc.pid)} {name}\n"
    )
    _tracked[proc.pid] = proc


def untrack(proc: subprocess.Popen[bytes]) -> None:
    """``proc`` was stopped: forget it."""
    _tracked.pop(proc.pid, None)
    (PID_DIR / f"{proc.pid}.pid").unlink(missing_ok=True)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """``sig`` to the process group ``pid`` leads, or to ``pid`` alone when it leads none."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def sweep() -> list[str]:
    """Stop the servers that runs which are gone left behind; returns their names (for a warning)."""
    stopped = []
    for pid_file in PID_DIR.glob("*.pid") if PID_DIR.is_dir() else ():
        try:
            owner, owner_start, start, name = pid_file.read_text().split(maxsplit=3)
            pid = int(pid_file.stem)
        except (OSError, ValueError):
            pid_file.unlink(missing_ok=True)
            continue
        if _start_time(int(owner)) == owner_start:
            continue  # its run is still going (a run beside this one)
        if _start_time(pid) == start:
            _signal_group(pid, signal.SIGKILL)
            stopped.append(f"{name.strip()} (pid {pid})")
        pid_file.unlink(missing_ok=True)
    return stopped


@atexit.register
def _stop_all() -> None:
    for proc in list(_tracked.values()):
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5.0)
        untrack(proc)


def wait_for(condition_name: str, check: object, *, timeout: float, server: ServerProcess | None = None) -> Any:
    """Poll ``check()`` until it is true and return what it returned; fail naming ``condition_name``
    (and the server's log tail, or its exit status when it died) after ``timeout`` seconds."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if found := check():
                return found
        if server is not None and not server.alive():
            raise RuntimeError(
                f"{server.name} exited with status {server.proc.returncode if server.proc else None} before "
                f"{condition_name}; its log ({server.log}):\n{server.log_tail()}"
            )
        if time.monotonic() > deadline:
            tail = f"; {server.name}'s log ({server.log}):\n{server.log_tail()}" if server else ""
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {condition_name}{tail}")
        time.sleep(0.1)
