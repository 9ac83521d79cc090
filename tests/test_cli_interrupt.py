"""Ctrl-C: a KeyboardInterrupt anywhere in ``mqbalance`` — also while a command starts up, before
any command installs its own signal handlers — is one line on stderr and exit code 130, never a
traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import mqbalance.cli
from mqbalance.cli import main
from terminal import as_at_a_terminal


def _interrupted_while_connecting(argv: list[str], listener: socket.socket) -> subprocess.CompletedProcess[str]:
    """Run ``mqbalance ARGV`` against a listener that accepts and never answers; SIGINT once the
    command has connected (it is then waiting for its first answer)."""
    proc = subprocess.Popen(
        as_at_a_terminal([sys.executable, "-m", "mqbalance.cli", *argv]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    listener.settimeout(60)
    conn, _ = listener.accept()
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        conn.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def silent() -> socket.socket:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        yield s


def test_ctrl_c_while_a_command_reads_the_cluster(silent: socket.socket, tmp_path: Path) -> None:
    addr = f"127.0.0.1:{silent.getsockname()[1]}"
    done = _interrupted_while_connecting(
        ["snapshot", "--namesrv", addr, "--timeout", "60", "-o", f"{tmp_path}/s.json"], silent
    )
    assert (done.returncode, done.stderr) == (130, "mqbalance: interrupted\n"), done.stderr
    assert not (tmp_path / "s.json").exists()


def test_ctrl_c_while_a_member_starts_up(silent: socket.socket, tmp_path: Path) -> None:
    """Before the member installs its handlers (it is checking the name servers): the same line;
    the record file it had created is removed (nothing was recorded)."""
    addr = f"127.0.0.1:{silent.getsockname()[1]}"
    record = tmp_path / "r.jsonl"
    argv = ["rocketmq-consume", "--namesrv", addr, "--group", "g", "--topic", "T", "--timeout", "60"]
    done = _interrupted_while_connecting([*argv, "--record", str(record)], silent)
    assert (done.returncode, done.stderr) == (130, "mqbalance: interrupted\n"), done.stderr
    assert not record.exists()


def test_ctrl_c_while_the_commands_are_loaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(mqbalance.cli, "commands", interrupted)
    assert main(["assign"]) == 130
    assert capsys.readouterr().err == "mqbalance: interrupted\n"
