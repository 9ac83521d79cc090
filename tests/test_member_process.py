"""The member life cycle's signals in a real process: SIGQUIT prints every thread's stack and the
member goes on; SIGTERM then ends it gracefully (exit 0, a ``stop`` record)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from mqbalance.record_files import load_records

MEMBER = """
import sys, threading, time
from pathlib import Path
from mqbalance.member_process import MemberProcess, run_member_process

class Idle(MemberProcess):
    client_id = "idle"
    def __init__(self, write): self.write = write
    def connect(self): pass
    def start(self): threading.Thread(target=time.sleep, args=(600,), name="beside", daemon=True).start()
    def step(self, stop):
        stop.wait(0.05)
        return True
    def close(self): return {}

sys.exit(run_member_process(Idle, Path(sys.argv[1])))
"""


def _wait_for_start(record: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if record.exists() and '"e":"start"' in record.read_text().replace(" ", ""):
            return
        time.sleep(0.05)
    raise AssertionError(f"the member never started (exit {proc.poll()})")


def test_sigquit_prints_every_threads_stack_and_the_member_goes_on(tmp_path: Path) -> None:
    record, err = tmp_path / "idle.jsonl", tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", MEMBER, str(record)], stderr=stderr, text=True)
        try:
            _wait_for_start(record, proc)
            proc.send_signal(signal.SIGQUIT)
            deadline = time.monotonic() + 30
            while "Current thread" not in err.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            assert proc.poll() is None, "SIGQUIT ended the member"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    dump = err.read_text()
    assert "Current thread" in dump and "run_member_process" in dump, dump
    assert "\nThread 0x" in "\n" + dump, dump  # the other thread's stack too, not only the current one
    assert [r["e"] for r in load_records([record])["idle"]] == ["start", "stop"]


HOLDING = """
import os, signal, sys, time
from pathlib import Path
from mqbalance.member_process import MemberProcess, run_member_process

class Holding(MemberProcess):
    client_id = "holding"
    def __init__(self, write): self.steps = 0
    def connect(self): pass
    def start(self): pass
    def step(self, stop):
        self.steps += 1
        if self.steps == 1:
            # what stop.wait(timeout) holds just before and just after it waits: the event's lock
            with stop._cond:
                os.kill(os.getpid(), signal.SIGTERM)
                until = time.monotonic() + 0.5
                while time.monotonic() < until:  # calls: the Python-level handler runs in here
                    pass
        stop.wait(0.05)
        return True
    def close(self): return {"steps": self.steps}

sys.exit(run_member_process(Holding, Path(sys.argv[1])))
"""


def test_sigterm_stops_a_member_that_holds_the_stop_events_lock(tmp_path: Path) -> None:
    """The handler runs on the main thread between two byte codes, so it can run while the main
    thread holds the stop event's lock (inside ``stop.wait``); a handler calling ``stop.set()``
    there blocks for good. Here the member holds that lock when SIGTERM comes, every time."""
    record, err = tmp_path / "holding.jsonl", tmp_path / "stderr.txt"
    with err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", HOLDING, str(record)], stderr=stderr, text=True)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGQUIT)  # every thread's stack, for the message
            time.sleep(1)
            proc.kill()
            proc.wait()
            raise AssertionError(f"the member did not stop within 60 s of SIGTERM:\n{err.read_text()}") from None
    assert code == 0, err.read_text()
    records = load_records([record])["holding"]
    assert [r["e"] for r in records] == ["start", "stop"]
    assert records[-1]["steps"] <= 3  # stopped right after the lock was let go, not by a timeout
