"""Spark sessions for the fleet audits of both kinds: a local session by default (a cluster is the
same code with another master URL, executors need ``mqbalance`` installed or shipped, see
:mod:`mqbalance.fleet.shipping`), a Spark Connect session with ``remote``.

``pyspark`` is imported lazily, so ``import mqbalance`` works without it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mqbalance.fleet import shipping

__all__ = ["WORKER_ALLOCATOR_ENV", "is_connect", "local_session", "session", "stop_session"]


#: set in the executors' Python workers: Arrow's allocator never returns freed memory early (it is
#: returned when the worker exits; Spark ends an idle one after a minute)
WORKER_ALLOCATOR_ENV = ("MIMALLOC_PURGE_DELAY", "-1")

# Spark's own ERROR lines (a stack trace per failed task, hundreds of lines when memory runs out)
# are off: a failure reaches the driver as an exception, which the CLI turns into one line where
# the cause is known (:mod:`mqbalance.fleet.shipping`) and otherwise raises with Spark's message.
_LOG4J = """status = warn
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = fatal
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def local_session(
    master: str | None = None,
    *,
    app_name: str = "mqbalance",
    driver_memory: str = "2g",
    shuffle_partitions: int = 4,
    fast_start: bool = False,
    ship_environment: bool = False,
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A SparkSession: ``local[2]`` by default (loopback only, no UI, quiet logs, its own temp
    dir removed by :func:`stop_session`), or the given master URL. ``fast_start`` trades heavy-SQL
    speed for a faster JVM start (tests). ``ship_environment`` (cluster masters only; local
    executors already run this Python) packs this environment and ships it to the executors
    (:mod:`mqbalance.fleet.shipping`), for workers without mqbalance. ``conf``: further Spark
    settings, applied last."""
    master = master or "local[2]"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tmp = tempfile.mkdtemp(prefix="mqbalance-spark-")
    log4j = os.path.join(tmp, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(_LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Djava.io.tmpdir={tmp}"
    if fast_start:
        java_opts += " -XX:TieredStopAtLevel=1"
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Arrow's allocator (mimalloc) in the Python workers keeps freed memory for the next call
        # instead of returning it within milliseconds and faulting it in again: a 4-million-row
        # call of assign_queues spent 0.5-1.4 s in the kernel doing that (docs/performance.md)
        .config(f"spark.executorEnv.{WORKER_ALLOCATOR_ENV[0]}", WORKER_ALLOCATOR_ENV[1])
    )
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    shipped = shipping.environment_conf() if ship_environment and not master.startswith("local") else {}
    for key, value in shipped.items():
        builder = builder.config(key, value)
    try:
        with shipping.executor_python(shipped):
            spark = builder.getOrCreate()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    spark.sparkContext.setLogLevel("ERROR")
    setattr(spark, "_mqbalance_tmp", tmp)  # removed by stop_session  # noqa: B010
    return spark


def stop_session(spark: Any) -> None:
    """Stop a session and remove the temp dir :func:`local_session` gave it."""
    tmp = getattr(spark, "_mqbalance_tmp", None)
    try:
        spark.stop()
    finally:  # also when the JVM is gone (it ran out of memory, say)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def session(master: str | None = None, *, remote: str | None = None, **options: Any) -> Iterator[Any]:
    """The active SparkSession if there is one (left running), else a new :func:`local_session`
    (stopped on exit). With ``remote`` (``sc://host:port``), a Spark Connect session to that
    server instead (``options`` other than ``conf`` are the server's business then)."""
    from pyspark.sql import SparkSession

    if remote is not None:
        spark = SparkSession.builder.remote(remote).getOrCreate()
        for key, value in (options.get("conf") or {}).items():
            spark.conf.set(key, value)
        try:
            yield spark
        finally:
            spark.stop()
        return
    existing = SparkSession.getActiveSession()
    spark = existing or local_session(master, **options)
    try:
        yield spark
    finally:
        if existing is None:
            stop_session(spark)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (it has no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
