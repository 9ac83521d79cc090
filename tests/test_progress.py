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
