"""Ship this Python environment to Spark executors whose workers lack ``mqbalance``.

PySpark's documented way ("Python Package Management"): a packed virtual environment passed as
``spark.archives`` (``env.tar.gz#environment``), unpacked by every executor into its working
directory, and ``PYSPARK_PYTHON=./environment/bin/python``. :func:`environment_conf` returns those
entries for a session builder.

Why not ``venv-pack``: it (0.2.0, and its fork ``venv-pack2``) refuses an environment with an
editable install (a ``.pth`` pointing outside the venv), which is how mqbalance is developed, and
it packs the whole prefix (here over 1 GB: pyspark's own jars, the dev tools). So the archive is
built here from the installed distributions' ``RECORD`` files, and only what the executors import:
the ``mqbalance`` package directory as imported by the driver (editable or not, with its compiled
``_core`` extension) and the installed closure of its requirements plus those of the ``spark``
extra, minus ``pyspark`` (the cluster's own pyspark runs the workers) and ``matplotlib`` (plots
are drawn on the driver). The layout is a venv's (``pyvenv.cfg``, ``bin/python``,
``lib/pythonX.Y/site-packages``); like one made by venv-pack, ``bin/python`` links to this
machine's base interpreter, so the workers need the same OS and CPU architecture and that Python at
the same path (conda-pack would ship the interpreter too; we have no conda).

The archive is cached by a content key (Python build, every shipped distribution's name, version
and ``RECORD``, every byte of the ``mqbalance`` package) under ``$MQBALANCE_CACHE_DIR``, else
``$XDG_CACHE_HOME/mqbalance``, else ``~/.cache/mqbalance``: a second run with the same code reuses
it, an edit to mqbalance repacks it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import io
import os
import re
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import mqbalance
from mqbalance.exceptions import ExecutorEnvironmentError, SparkMemoryError

__all__ = [
    "ARCHIVE_ALIAS",
    "EXECUTOR_PYTHON",
    "ExecutorEnvironmentError",
    "cache_dir",
    "environment_archive",
    "environment_conf",
    "executor_import_problem",
    "executor_python",
    "explain_executor_errors",
    "shipped_distributions",
]

ARCHIVE_ALIAS = "environment"
EXECUTOR_PYTHON = f"./{ARCHIVE_ALIAS}/bin/python"
# Requirements of the spark extra that the executors do not import.
DRIVER_ONLY = frozenset({"pyspark", "matplotlib"})
FORMAT_VERSION = "1"  # part of the cache key: bump when the archive layout changes
KEEP_ARCHIVES = 2  # newest archives kept in the cache directory
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;]*)(?:;(.*))?$")


def cache_dir() -> Path:
    """Where packed environments are kept (see the module docs)."""
    explicit = os.environ.get("MQBALANCE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mqbalance"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: metadata.Distribution, extras: frozenset[str]) -> list[str]:
    """Names of ``dist``'s requirements, unconditional or of one of ``extras``. Other markers
    (python_version, platform) are not evaluated: a requirement that does not apply here is
    simply not installed, and skipped."""
    names = []
    for req in dist.requires or []:
        m = _REQUIREMENT.match(req)
        if not m:
            continue
        marker = m.group(4) or ""
        wanted = re.findall(r"""extra\s*==\s*['"]([^'"]+)['"]""", marker)
        if wanted and not any(_normalise(e) in extras for e in wanted):
            continue
        names.append(m.group(1))
    return names


def shipped_distributions() -> list[metadata.Distribution]:
    """``mqbalance`` and the installed closure of its requirements and its ``spark`` extra's,
    without :data:`DRIVER_ONLY`; in name order."""
    seen: dict[str, metadata.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [("mqbalance", frozenset({"spark"}))]
    while todo:
        name, extras = todo.pop()
        key = _normalise(name)
        if key in seen or key in DRIVER_ONLY:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if key == "mqbalance":
                raise
            continue  # a requirement for another platform or Python
        seen[key] = dist
        todo.extend((r, frozenset()) for r in _requirements(dist, extras))
    return [seen[k] for k in sorted(seen)]


def _package_dir() -> Path:
    """The mqbalance package the driver runs, wherever it comes from."""
    return Path(mqbalance.__file__).resolve().parent


def _site_files(dist: metadata.Distribution) -> list[tuple[str, Path]]:
    """``(path inside site-packages, file on disk)`` of an installed distribution, from its
    RECORD: no scripts (outside site-packages), no ``.pth`` (an editable install's pointer to
    the source tree, which the workers do not have), no byte code."""
    out = []
    for f in dist.files or []:
        rel = f.as_posix()
        if rel.startswith("../") or rel.endswith(".pth") or "__pycache__/" in rel:
            continue
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            out.append((rel, path))
    return out


def _package_files() -> list[tuple[str, Path]]:
    root = _package_dir()
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out.append((f"mqbalance/{path.relative_to(root).as_posix()}", path))
    return out


def _base_python() -> Path:
    """The interpreter the packed venv's ``bin/python`` links to (the base of this venv)."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))


def _layout() -> tuple[str, list[tuple[str, Path]]]:
    """The content key and the files: ``(name in the archive, file)``."""
    digest = hashlib.sha256()
    python = _base_python()
    digest.update(f"{FORMAT_VERSION}\n{sys.version}\n{python}\n{sys.platform}\n{os.uname().machine}\n".encode())
    files: dict[str, Path] = {}
    for dist in shipped_distributions():
        digest.update(f"{dist.metadata['Name']}=={dist.version}\n".encode())
        digest.update((dist.read_text("RECORD") or "").encode())
        for rel, path in _site_files(dist):
            files[rel] = path
    for rel, path in _package_files():
        files[rel] = path
        digest.update(rel.encode() + b"\0" + path.read_bytes())
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    return digest.hexdigest()[:20], [(f"{site}/{rel}", files[rel]) for rel in sorted(files)]


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def environment_archive(*, progress: Callable[[str], None] | None = None) -> Path:
    """The packed environment (``.tar.gz``), built on the first call for this content and reused
    after; older archives beyond the newest :data:`KEEP_ARCHIVES` are deleted."""
    say = progress or (lambda _: None)
    key, files = _layout()
    folder = cache_dir() / "envs"
    archive = folder / f"env-{key}.tar.gz"
    if archive.exists():
        say(f"reusing the packed environment {archive}")
        return archive
    folder.mkdir(parents=True, exist_ok=True)
    python = _base_python()
    size = sum(p.stat().st_size for _, p in files)
    say(f"packing this Python environment ({len(files):,} files, {size / 2**20:,.0f} MB) into {archive}")
    fd, tmp = tempfile.mkstemp(prefix=".env-", suffix=".tar.gz.part", dir=folder)
    os.close(fd)
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
            cfg = f"home = {python.parent}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n"
            _add_bytes(tar, "pyvenv.cfg", cfg.encode())
            for name, target in (("bin/python", str(python)), ("bin/python3", "python")):
                link = tarfile.TarInfo(name)
                link.type = tarfile.SYMTYPE
                link.linkname = target
                link.mode = 0o777
                tar.addfile(link)
            for name, path in files:
                tar.add(path, arcname=name, recursive=False)
        os.replace(tmp, archive)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    old = sorted(folder.glob("env-*.tar.gz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in old[KEEP_ARCHIVES:]:
        stale.unlink(missing_ok=True)
    say(f"packed: {archive.stat().st_size / 2**20:,.0f} MB")
    return archive


def environment_conf(*, progress: Callable[[str], None] | None = None) -> dict[str, str]:
    """Spark settings that ship this environment to the executors: ``spark.archives`` (the
    archive of :func:`environment_archive`, unpacked as ``./environment``) and
    ``spark.pyspark.python``. PySpark 4 takes the executors' interpreter from the driver's
    ``PYSPARK_PYTHON`` when the context starts: create the session inside
    :func:`executor_python`."""
    archive = environment_archive(progress=progress)
    return {"spark.archives": f"{archive}#{ARCHIVE_ALIAS}", "spark.pyspark.python": EXECUTOR_PYTHON}


@contextmanager
def executor_python(conf: dict[str, str]) -> Iterator[None]:
    """``PYSPARK_PYTHON`` set to ``conf["spark.pyspark.python"]`` for the block (a SparkContext
    reads it once, when it starts), then restored; nothing when ``conf`` does not set it."""
    python = conf.get("spark.pyspark.python")
    if python is None:
        yield
        return
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = python
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = before


_MISSING = re.compile(r"No module named '([^']+)'")
_STALE = re.compile(r"Can't get attribute '([^']+)' on <module '(mqbalance[\w.]*)' from '([^']+)'")


def executor_import_problem(error: BaseException) -> ExecutorEnvironmentError | None:
    """A short explanation when a Spark job failed because the executors' Python cannot import
    mqbalance or one of its dependencies, or runs another mqbalance than the driver; ``None``
    for any other failure."""
    text = str(error)
    stale = _STALE.search(text)
    if stale:
        name, module, path = stale.groups()
        return ExecutorEnvironmentError(
            f"the executors run another mqbalance than the driver ({module}.{name} is missing in {path}); "
            "install this version on the workers or pass --ship-environment",
            module,
        )
    missing = _MISSING.search(text)
    if missing and "ModuleNotFoundError" in text:
        module = missing.group(1)
        return ExecutorEnvironmentError(
            f"the executors cannot import mqbalance (their Python has no module {module!r}); "
            "install it on the workers or pass --ship-environment",
            module,
        )
    return None


@contextmanager
def explain_executor_errors() -> Iterator[None]:
    """Turn a Spark job failure of :func:`executor_import_problem`'s kind into its short
    :class:`ExecutorEnvironmentError` (the Py4J traceback dropped); other errors pass unchanged."""
    try:
        yield
    except Exception as e:
        problem = executor_import_problem(e) or memory_problem(e)
        if problem is None:
            raise
        raise problem from None


_MEMORY = re.compile(r"(OutOfDirectMemoryError|OutOfMemoryError|Java heap space|GC overhead limit exceeded)")
_TOO_LITTLE = re.compile(r"Insufficient (driver|executor) memory: System memory (\d+) must be at least (\d+)")


def memory_problem(error: BaseException) -> SparkMemoryError | None:
    """A short :class:`SparkMemoryError` for a job that failed for lack of memory (or a session
    given less than Spark's minimum), else ``None``."""
    small = _TOO_LITTLE.search(str(error))
    if small is not None:
        which, minimum = small.group(1), int(small.group(3))
        return SparkMemoryError(
            f"Spark needs at least {-(-minimum // 2**20)}m of {which} memory: raise --{which}-memory",
            int(small.group(2)),
        )
    found = _MEMORY.search(str(error))
    if found is None:
        return None
    what = "direct (off-heap) memory" if "Direct" in found.group(1) else "heap memory"
    return SparkMemoryError(
        f"Spark ran out of {what} ({found.group(1)}): raise --driver-memory (local mode) or "
        "--executor-memory (cluster), or pass more --partitions",
        found.group(1),
    )
