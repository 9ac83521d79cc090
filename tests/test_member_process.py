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
