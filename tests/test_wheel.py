"""The wheel a user installs (issue 24): ``make wheel`` builds one abi3 wheel with a manylinux2014
floor; it is installed into a fresh venv (``python -m venv``, its dependencies from the package
index) with no Rust toolchain on PATH, run from a directory outside the source tree, and used as a
user would: ``mqbalance --help``, ``mqbalance assign`` on the bundled example, an import of every
public module and a small smoke script.

The wheel is built once and kept in ``~/.cache/mqbalance/wheels/<hash of the sources>/`` (rebuilt
only when a source, the manifests or the lock file change: ~1.5 min with a warm ``target/``, a few
minutes cold); the venv and the install take ~20 s with pip's cache warm.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("MQBALANCE_CACHE", Path.home() / ".cache" / "mqbalance")) / "wheels"
#: What the wheel is built from: a change to any of these builds it again.
SOURCES = ("Cargo.toml", "Cargo.lock", "pyproject.toml", "README.md", "LICENSE", "rust", "python/mqbalance")
#: Public modules may need an extra the smoke venv does not install: its package, its extra.
NEEDS_EXTRA = {"pyspark": "spark", "kafka": "kafka-python"}


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__pycache__" in f.parts or f.suffix in {".so", ".pyc"}:
                continue
            digest.update(str(f.relative_to(ROOT)).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def wheel() -> Path:
    """The built wheel: from the cache when the sources are unchanged, else ``make wheel``."""
    cached = CACHE / _sources_hash()
    found = sorted(cached.glob("mqbalance-*.whl"))
    if found:
        return found[0]
    out = cached.with_name(cached.name + ".building")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(
        ["make", "-C", str(ROOT), "wheel", f"WHEEL_DIR={out}"], check=True, timeout=1800, stdout=subprocess.DEVNULL
    )
    for old in CACHE.iterdir():  # wheels of other sources: not used again
        if old != out:
            shutil.rmtree(old, ignore_errors=True)
    out.rename(cached)
    (built,) = cached.glob("mqbalance-*.whl")
    return built


def _toolchain_free_path() -> str:
    """PATH without any directory holding cargo, rustc, rustup or maturin (and without venvs)."""
    keep = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not Path(d).is_dir() or d.startswith(str(ROOT)):
            continue
        if any((Path(d) / tool).exists() for tool in ("cargo", "rustc", "rustup", "maturin")):
            continue
        keep.append(d)
    return os.pathsep.join(keep)


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """``(venv python, environment, working directory)``: a fresh venv with the wheel installed."""
    home = tmp_path_factory.mktemp("wheel-user")
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CARGO", "RUSTUP"))}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), _toolchain_free_path()])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--only-binary", ":all:", str(wheel)],
        check=True,
        timeout=900,
        env=env,
        cwd=home,
    )
    return python, env, home


def _run(installed: tuple[Path, dict[str, str], Path], *args: str) -> subprocess.CompletedProcess[str]:
    python, env, home = installed
    return subprocess.run(list(args), env=env, cwd=home, capture_output=True, text=True, timeout=600)


def test_the_wheel_is_one_abi3_wheel_for_cpython_311_up_on_glibc_217(wheel):
    name = wheel.name
    assert name.startswith("mqbalance-") and "-cp311-abi3-" in name, name
    assert "manylinux2014_x86_64" in name or "manylinux_2_17_x86_64" in name, name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "mqbalance/_core.abi3.so" in names
    assert "mqbalance/py.typed" in names and "mqbalance/fleet/templates/report.html" in names
    for line in (
        "License-Expression: Apache-2.0",
        "Requires-Python: >=3.11",
        "Provides-Extra: spark",
        "Provides-Extra: zookeeper",
        "Provides-Extra: kafka-python",
        "Classifier: Programming Language :: Rust",
    ):
        assert line in metadata.splitlines(), line
    assert "Description-Content-Type: text/markdown" in metadata


def test_no_toolchain_and_no_source_tree_where_the_wheel_runs(installed):
    python, env, home = installed
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=env["PATH"]) is None, tool
    where = _run(installed, str(python), "-c", "import mqbalance, mqbalance._core as c; print(c.__file__)")
    assert where.returncode == 0, where.stderr
    core = Path(where.stdout.strip())
    assert core.name == "_core.abi3.so" and core.is_relative_to(home / "venv"), core
    assert not str(home).startswith(str(ROOT))


def test_mqbalance_help_lists_the_commands(installed):
    python, _, home = installed
    done = _run(installed, str(home / "venv" / "bin" / "mqbalance"), "--help")
    assert done.returncode == 0, done.stderr
    for command in ("audit", "assign", "snapshot", "simulate"):
        assert command in done.stdout


def test_mqbalance_assign_on_the_bundled_example(installed):
    python, _, home = installed
    done = _run(installed, str(home / "venv" / "bin" / "mqbalance"), "assign", "--top", "5", "--quiet")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("example fleet (seed 7):")
    assert lines[1].startswith("fleet: ") and "duplicated ids 1" in lines[1]
    assert any(line.startswith("cg-payments-dup") for line in lines[4:]), done.stdout  # a hazard, among the worst


IMPORT_ALL = """
import importlib, pkgutil, sys, mqbalance
missing, failed, ok = {}, {}, 0
for m in pkgutil.walk_packages(mqbalance.__path__, "mqbalance."):
    if any(part.startswith("_") for part in m.name.split(".")[1:]):
        continue
    try:
        importlib.import_module(m.name)
        ok += 1
    except ModuleNotFoundError as e:
        missing[m.name] = e.name.split(".")[0]
    except Exception as e:
        failed[m.name] = repr(e)
print(ok, sorted(set(missing.values())), failed)
"""


def test_every_public_module_imports(installed):
    python, _, _ = installed
    done = _run(installed, str(python), "-c", IMPORT_ALL)
    assert done.returncode == 0, done.stderr
    ok, missing, failed = done.stdout.strip().split(" ", 2)
    assert int(ok) >= 60 and failed == "{}", done.stdout
    assert set(eval(missing)) <= NEEDS_EXTRA.keys(), done.stdout  # only an extra's package may be absent


SMOKE = """
import numpy as np
from mqbalance import MessageQueue, strategy
from mqbalance.allocation import bulk
from mqbalance.kafka import assignor
from mqbalance.fleet import audit_snapshot
from mqbalance.fleet.rocketmq.example import example_fleet
from mqbalance.fleet.rocketmq.from_json import snapshot_from_dict
from mqbalance.rebalance import InMemoryBroker, PushConsumer
from mqbalance.exceptions import InvalidInputError

queues = [MessageQueue("T", "b", i) for i in range(5)]
assert [q.queue_id for q in strategy("AVG").allocate("g", "c1", queues, ["c1", "c2"])] == [0, 1, 2]
owners = bulk.owners("AVG", ["T"] * 5, ["b"] * 5, np.arange(5), ["c1", "c2"])
assert owners.tolist() == [0, 0, 0, 1, 1] and isinstance(owners, np.ndarray)
got = assignor("range").assign_lists({"t": 3}, {"a": ["t"], "b": ["t"]})
assert [tp.partition for tp in got["a"]] == [0, 1] and [tp.partition for tp in got["b"]] == [2]
try:
    assignor("range").assign({"t": 1}, {"a\\ud800": ["t"]})
except InvalidInputError as e:
    assert "member id" in str(e)
else:
    raise AssertionError("a lone surrogate went through")
c = PushConsumer("c1", "g", ["T"], "AVG", InMemoryBroker(), {"T": queues}.get, semantics="4.x")
c.start(now_ms=0); c.tick(now_ms=0)
assert len(c.owned()) == 5
result = audit_snapshot(snapshot_from_dict(example_fleet(7), "example"))
assert result.totals.queues_assigned > 0 and result.totals.duplicated_client_ids >= 1
print("smoke ok")
"""


def test_a_smoke_subset_runs_on_the_installed_wheel(installed):
    python, _, _ = installed
    done = _run(installed, str(python), "-c", SMOKE)
    assert done.returncode == 0 and done.stdout.strip() == "smoke ok", done.stderr
