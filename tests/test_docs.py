"""Every code block of the README and of the documentation site (``docs/**/*.md``) is a test.

* ``python`` blocks run: the blocks of one page in order, as one script, in a fresh interpreter
  (so a page's later blocks see its earlier ones, and no page sees another's state or environment);
* ``bash`` blocks are checked: each ``mqbalance`` command and its options against that command's
  ``--help``, each ``make`` target against the Makefile, each script or test path against the tree;
* ``text`` blocks are output (a console transcript, a traceback), not code.

A block that needs something a test machine does not have (a live ZooKeeper, a broker) is preceded
by ``<!-- not-run: the reason -->``; the reason is required.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
LANGUAGES = {"python", "bash", "text"}
UNCHECKED = {"pip"}  # installs elsewhere: nothing to check here


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = NOT_RUN.search(before)
        indent = len(m.group("indent"))
        code = "\n".join(line[indent:] for line in m.group("body").splitlines())
        line = text.count("\n", 0, m.start()) + 1
        found.append(Block(page, line, m.group("lang"), code, skip.group("reason") if skip else None))
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


ALL = [b for page in PAGES for b in blocks(page)]
PYTHON_PAGES = sorted({b.page for b in ALL if b.lang == "python" and b.not_run is None})


def test_the_pages_have_code_and_every_block_says_its_language():
    assert len(PAGES) > 20 and len(ALL) >= 30
    for b in ALL:
        assert b.lang in LANGUAGES, f"{_name(b.page)}:{b.line}: say ```python, ```bash or ```text, not {b.lang!r}"
        if b.not_run is not None:
            assert b.not_run, f"{_name(b.page)}:{b.line}: <!-- not-run: ... --> needs a reason"


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, id=_name(p), marks=[pytest.mark.spark] if "pyspark" in p.read_text(encoding="utf-8") else [])
        for p in PYTHON_PAGES
    ],
)
def test_python_blocks_run(page, tmp_path):
    lines: list[str] = []  # padded so that tracebacks give the page's own line numbers
    for b in blocks(page):
        if b.lang == "python" and b.not_run is None:
            lines += [""] * (b.line - len(lines))
            lines += b.code.splitlines()
    source = "\n".join(lines)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    run = subprocess.run(
        [sys.executable, "-c", f"exec(compile({source!r}, {_name(page)!r}, 'exec'))"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, f"{_name(page)}:\n{run.stdout}\n{run.stderr}"


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.M))


def _cli_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, func = scripts["mqbalance"].split(":")
    return getattr(importlib.import_module(module), func)


_HELP: dict[tuple[str, ...], str | None] = {}


def _help(words: tuple[str, ...]) -> str | None:
    """``mqbalance WORDS --help``, or None when argparse refuses the words."""
    if words not in _HELP:
        out, err = io.StringIO(), io.StringIO()
        code: object = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                _cli_main()([*words, "--help"])
            except SystemExit as e:
                code = e.code
        _HELP[words] = out.getvalue() if code in (0, None) and out.getvalue() else None
    return _HELP[words]


def _commands(code: str) -> list[list[str]]:
    joined = re.sub(r"\\\n", " ", code)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            commands.append(shlex.split(line))
    return commands


def _check_mqbalance(args: list[str]) -> list[str]:
    words: tuple[str, ...] = ()
    for arg in args:  # the command words: `audit`, `group status`, ...
        if arg.startswith(("-", "[")) or not re.fullmatch(r"[a-z][a-z-]*", arg) or _help((*words, arg)) is None:
            break
        words = (*words, arg)
        if len(words) == 2:
            break
    if not words:
        return [f"`mqbalance {' '.join(args)}`: no such command"]
    usage = _help(words) or ""
    problems = []
    for arg in args[len(words) :]:
        option = re.match(r"^\[?(-{1,2}[A-Za-z][\w-]*)", arg)
        if option and not re.search(rf"(^|[\s,\[]){re.escape(option.group(1))}\b", usage):
            problems.append(f"`mqbalance {' '.join(words)}` has no option {option.group(1)}")
    return problems


def _check(command: list[str], targets: set[str]) -> list[str]:
    head, args = command[0], command[1:]
    if head == "mqbalance":
        return _check_mqbalance(args)
    if head == "make":
        return [f"no make target {a}" for a in args if "=" not in a and a not in targets]
    if head in UNCHECKED:
        return []
    if head in {"python", "pytest"} or head.endswith("/python"):
        paths = [a for a in args if a.endswith(".py") or (a.startswith(("tests/", "benches/")) and "/" in a)]
        if not paths:
            return [f"`{' '.join(command)}`: no script or test path to check"]
        return [f"{p}: not in the tree" for p in paths if not (ROOT / p.split("::")[0]).exists()]
    return [f"`{' '.join(command)}`: a command the docs test does not know how to check"]


@pytest.mark.parametrize("page", sorted({b.page for b in ALL if b.lang == "bash"}), ids=_name)
def test_bash_blocks_name_real_commands_options_targets_and_files(page):
    targets = _makefile_targets()
    problems = []
    for b in blocks(page):
        if b.lang == "bash" and b.not_run is None:
            for command in _commands(b.code):
                problems += [f"{_name(page)}:{b.line}: {p}" for p in _check(command, targets)]
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_wrong_option_a_missing_target_and_a_missing_file():
    targets = _makefile_targets()
    assert _check(["mqbalance", "assign", "--top", "3"], targets) == []
    assert _check(["mqbalance", "assign", "--no-such-option"], targets)
    assert _check(["mqbalance", "no-such-command"], targets)
    assert _check(["make", "no-such-target"], targets)
    assert _check(["python", "benches/no_such_script.py"], targets)
    assert _check(["rm", "-rf", "/"], targets)
