"""Progress lines, the Spark memory error classifier."""

from __future__ import annotations

import io

from mqbalance.fleet.shipping import SparkMemoryError, memory_problem
from mqbalance.progress import Progress


def test_progress_prints_timestamped_lines_unless_quiet():
    out = io.StringIO()
    Progress(stream=out)("loaded")
    assert out.getvalue().endswith("s] loaded\n") and out.getvalue().startswith("[")
    quiet = io.StringIO()
    Progress(quiet=True, stream=quiet)("loaded")
    assert quiet.getvalue() == ""


def test_out_of_memory_becomes_one_line_naming_the_setting():
    error = RuntimeError("Py4JJavaError ... io.netty.util.internal.OutOfDirectMemoryError: failed to allocate")
    problem = memory_problem(error)
    assert isinstance(problem, SparkMemoryError)
    assert "direct (off-heap) memory" in str(problem) and "--driver-memory" in str(problem)
    assert "heap memory" in str(memory_problem(RuntimeError("java.lang.OutOfMemoryError: Java heap space")))
    assert memory_problem(RuntimeError("ZeroDivisionError")) is None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_counter_draws_a_bar_in_place_on_a_terminal_and_plain_lines_elsewhere():
    term = _Terminal()
    with Progress(stream=term).counter("assigning", "queues") as update:
        update(5, 20)
        update(20, 20)  # the last update is always shown
    text = term.getvalue()
    assert text.startswith("\r[") and text.endswith("\n")
    assert "assigning: [#####...............] 5/20 queues (25%)" in text
    assert "assigning: [####################] 20/20 queues (100%)" in text
    assert text.count("\n") == 1  # one line, redrawn
    plain = io.StringIO()
    with Progress(stream=plain).counter("assigning", "queues", interval=3600) as update:
        update(5, 20)
        update(6, 20)  # within the interval: not printed
        update(20, 20)
    lines = [line.split("] ", 1)[1] for line in plain.getvalue().splitlines()]
    assert lines == ["assigning: 5/20 queues (25%)", "assigning: 20/20 queues (100%)"]
    quiet = io.StringIO()
    with Progress(quiet=True, stream=quiet).counter("assigning", "queues") as update:
        update(20, 20)
    assert quiet.getvalue() == ""


def test_assign_snapshot_reports_every_queue_it_assigns():
    from mqbalance.fleet import assign_snapshot, example_fleet, snapshot_from_dict

    snap = snapshot_from_dict(example_fleet(7, groups=12), "example")
    seen: list[tuple[int, int]] = []
    rows = assign_snapshot(snap, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # every readable queue of every (group, topic) pair is counted once
    assert seen[-1][1] == len(
        set(zip(*(rows.column(c).to_pylist() for c in ("group", "topic", "broker_name", "queue_id"))))
    )
