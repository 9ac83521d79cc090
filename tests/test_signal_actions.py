"""Signal actions run on the signal thread, the handler's ``interrupt`` on the main thread; leaving
the block puts back what was there."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from mqbalance.signal_actions import signal_actions


def test_an_action_runs_on_the_signal_thread_and_the_interrupt_on_the_main_thread() -> None:
    ran_on: dict[str, str] = {}
    done = threading.Event()

    def action() -> None:
        ran_on["action"] = threading.current_thread().name
        done.set()

    def interrupt(signum: int) -> None:
        ran_on["interrupt"] = f"{threading.current_thread().name} {signal.Signals(signum).name}"

    with signal_actions({signal.SIGUSR1: action}, interrupt=interrupt):
        os.kill(os.getpid(), signal.SIGUSR1)
        assert done.wait(30)
    assert ran_on == {"action": "signal-actions", "interrupt": "MainThread SIGUSR1"}


def test_leaving_puts_back_the_handlers_and_the_wakeup_fd() -> None:
    def before(signum: int, frame: object) -> None:
        pass

    old = signal.signal(signal.SIGUSR2, before)
    try:
        with signal_actions({signal.SIGUSR2: lambda: None}):
            assert signal.getsignal(signal.SIGUSR2) is not before
        assert signal.getsignal(signal.SIGUSR2) is before
        assert signal.set_wakeup_fd(-1) == -1
    finally:
        signal.signal(signal.SIGUSR2, old)


def test_an_interrupt_that_raises_gives_up_what_the_main_thread_does() -> None:
    class GiveUp(Exception):
        pass

    def interrupt(signum: int) -> None:
        raise GiveUp

    def signal_and_wait() -> None:
        os.kill(os.getpid(), signal.SIGUSR1)
        threading.Event().wait(30)

    with signal_actions({signal.SIGUSR1: lambda: None}, interrupt=interrupt), pytest.raises(GiveUp):
        signal_and_wait()


def test_a_wakeup_fd_set_already_is_refused_and_kept() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd)
    try:
        with (
            pytest.raises(RuntimeError, match=f"wakeup fd \\({write_fd}\\) is set already"),
            signal_actions({signal.SIGUSR1: lambda: None}),
        ):
            pass
        assert signal.set_wakeup_fd(-1) == write_fd
    finally:
        signal.set_wakeup_fd(-1)
        os.close(read_fd)
        os.close(write_fd)
