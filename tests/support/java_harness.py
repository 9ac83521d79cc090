"""The Java side of the tests (``tests/java``): where each module's classes and resolved jars are,
and how to start a JVM on them.

``make java`` (part of ``make test``) builds the modules: ``kafka`` (Apache Kafka's broker, Java
consumer and assignors), ``rocketmq5`` (Apache RocketMQ 5.x name server, broker, tools and client),
``rocketmq4`` (the 4.9.x client) and ``kafka-zk`` (Kafka 0.10.2.2's ZooKeeper-era consumer
assignors). A module that is not built fails the test that needs it, naming the command that builds
it — it never skips.

Example:
    >>> argv = java_command("kafka", "io.mqbalance.harness.Oracle", heap_mb=256)
    >>> argv[0].endswith("java"), argv[-1]
    (True, 'io.mqbalance.harness.Oracle')
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "java"
MODULES = ("kafka", "rocketmq5", "rocketmq4", "kafka-zk")


class HarnessNotBuilt(RuntimeError):
    """A Java module's classes or classpath are missing: run ``make java``."""


def classpath(module: str) -> str:
    """The module's compiled classes followed by its resolved jars, as one ``-cp`` value."""
    if module not in MODULES:
        raise ValueError(f"unknown Java harness module {module!r}; known: {', '.join(MODULES)}")
    target = ROOT / module / "target"
    jars = target / "classpath.txt"
    if not jars.is_file() or not (target / "classes").is_dir():
        raise HarnessNotBuilt(f"the Java harness module {module!r} is not built ({jars} missing): run `make java`")
    return f"{target / 'classes'}{os.pathsep}{jars.read_text().strip()}"


def java_binary() -> str:
    """``$JAVA_HOME/bin/java`` when set, else ``java`` on PATH (Java 17 or newer)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise HarnessNotBuilt("no `java` on PATH and no JAVA_HOME: install a Java 17+ runtime")
    return found


def java_command(
    module: str,
    main_class: str,
    *,
    heap_mb: int = 256,
    properties: dict[str, str] | None = None,
    quick_jit: bool = True,
) -> list[str]:
    """The argv that runs ``main_class`` of ``module`` in a small JVM (fixed heap, serial GC: many
    JVMs share two cores in the tests). ``quick_jit``: compile with C1 only
    (``-XX:TieredStopAtLevel=1``): a server or client that runs for a test spends far less CPU
    compiling (a rolling restart of 24 Kafka consumers: 594 -> 320 CPU s), and its peak speed does
    not matter; ``False`` keeps C2, for a timed benchmark."""
    props = [f"-D{k}={v}" for k, v in (properties or {}).items()]
    return [
        java_binary(),
        f"-Xms{min(heap_mb, 64)}m",
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1" if quick_jit else "-XX:+TieredCompilation",
        "-Dfile.encoding=UTF-8",
        *props,
        "-cp",
        classpath(module),
        main_class,
    ]
