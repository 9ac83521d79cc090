"""The package's shape, checked from its source: modules import one way (no circle, however long,
and none hidden in a function), imports inside functions are only the lazy ones we chose, no shim
module re-exports another under an old name, and strategy names are listed only by the registry."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import mqbalance
from mqbalance import _core
from mqbalance.allocation.registry import StrategyName

PACKAGE = Path(mqbalance.__file__).parent

#: Packages whose modules may import our own modules inside a function: the command modules of
#: ``mqbalance.cli`` import what a command needs when it runs (or builds its options), so that
#: ``mqbalance --help`` does not load Spark, kazoo, Arrow or kafka-python
#: (:func:`test_help_loads_no_heavy_dependency` checks the outcome).
LAZY_OWN_IMPORTS = ("mqbalance.cli",)
#: Third-party packages imported inside a function: heavy and optional (or only for one feature).
LAZY_THIRD_PARTY = {"pyspark", "matplotlib", "pyarrow", "yaml", "resource"}
#: Compiled modules (no ``.py`` source): importable targets with no imports of their own.
COMPILED = {"mqbalance._core"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(name: str) -> str | None:
    """The module an imported dotted name resolves to (a module, else the package that holds it)."""
    while name and name not in MODULES and name not in COMPILED:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, bool, int]]:
    """``(imported module, inside a function, line)`` for each import of ``module``'s source."""
    tree = ast.parse(MODULES[module].read_text())
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(sub) for sub in ast.walk(node) if sub is not node)
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            out.append((name, id(node) in inside, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for name, _, _ in _imports(module):
            target = _target(name) if name.startswith("mqbalance") else None
            if target is not None and target != module and target not in COMPILED:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_modules_import_one_way_even_through_imports_in_functions():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_circle_however_long():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_are_only_the_lazy_ones_we_chose():
    found = []
    for module in MODULES:
        for name, in_function, line in _imports(module):
            if not in_function:
                continue
            own = name.startswith("mqbalance")
            lazy_package = any(module == p or module.startswith(p + ".") for p in LAZY_OWN_IMPORTS)
            allowed = lazy_package if own else name.split(".")[0] in LAZY_THIRD_PARTY
            if not allowed:
                found.append(f"{module}:{line} imports {name}")
    assert found == []


def test_help_loads_no_heavy_dependency():
    """``mqbalance --help`` and the list of commands import none of the heavy dependencies."""
    code = (
        "import sys\n"
        "from mqbalance.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'kazoo', 'pyarrow', 'kafka', 'pandas'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


def test_every_command_is_a_module_of_the_cli_package_and_in_its_docstring():
    """One module per command, named after it; the package's docstring lists every command."""
    import mqbalance.cli

    known = mqbalance.cli.commands()
    for name, command in known.items():
        assert f"mqbalance.cli.{name.replace('-', '_')}" in MODULES, name
        assert command.name == name
        listed = re.search(rf"``mqbalance {re.escape(name)}[ `]", mqbalance.cli.__doc__ or "")
        assert listed, f"{name} missing from mqbalance.cli's docstring"


def test_no_module_only_re_exports_another_under_an_old_name():
    """A shim is a module whose docstring says it moved or keeps old imports working."""
    moved = re.compile(r"moved to|keeps? old imports|former name|older name|still accepted|deprecated", re.I)
    found = [
        m for m, p in MODULES.items() if (doc := ast.get_docstring(ast.parse(p.read_text()))) and moved.search(doc)
    ]
    assert found == []


#: Every name a registry lists: the strategy registry's (RocketMQ's, and Kafka's for ZooKeeper
#: groups) and the core's Kafka assignors (client-side, ZooKeeper-era, broker-side).
REGISTERED_NAMES = (
    {n.value for n in StrategyName} | set(_core.KAFKA_ASSIGNORS) | set(_core.ZK_ASSIGNORS) | set(_core.SERVER_ASSIGNORS)
)
#: Where names are listed: the strategy registry (Kafka's are read from the core through ``_core``).
REGISTRY_MODULES = {"mqbalance.allocation.registry"}


def _names_in_a_row(text: str, names: set[str]) -> set[str]:
    """The names of ``text`` that stand next to another name, with only ``,``, ``|``, ``/``,
    spaces, ``or`` or ``and`` between them."""
    out: set[str] = set()
    last = None  # (name, end) of the previous name
    for m in re.finditer(r"[A-Za-z_-]+", text):
        word = m.group()
        if word not in names:
            if word not in ("or", "and"):
                last = None
            continue
        if last is not None and re.fullmatch(r"[\s,|/]*(?:(?:or|and)[\s,|/]*)?", text[last[1] : m.start()]):
            out |= {last[0], word}
        last = (word, m.end())
    return out


def _listed_names(tree: ast.AST, names: set[str]) -> list[tuple[int, set[str]]]:
    """``(line, names)`` for each list of registered names in ``tree``: a tuple, list, set or dict
    (its keys) holding one or more, a dict mapping onto two or more, or a string with two or more in
    a row (``"range|sticky"``, ``"AVG, STICKY"``). A name alone (a default, an example, a
    comparison, a message naming one) is fine; docstrings explain, and chosen defaults
    (``DEFAULT_* = ...``) choose: neither enumerates."""
    prose = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            prose.add(id(body[0].value))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.startswith("DEFAULT_") for t in targets):
                prose.update(id(sub) for sub in ast.walk(node.value))
    out = []
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            listed = _names_in_a_row(node.value, names)
            least = 2
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            listed = {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)} & names
            least = 1
            if isinstance(node, ast.Dict) and not listed:  # a map onto names: two or more values
                listed = {e.value for e in node.values if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                listed &= names
                least = 2
        else:
            continue
        if len(listed) >= least:
            out.append((node.lineno, listed))
    return out


def test_strategy_and_assignor_names_are_listed_only_by_the_registry():
    """Outside the registry a strategy or Kafka assignor name is fine alone, but a second list of
    them, however short, will go stale: read the registry (``REGISTRY``, ``names_for``,
    ``mqbalance.kafka.ASSIGNORS`` / ``ZK_ASSIGNORS`` / ``SERVER_ASSIGNORS``) instead."""
    found = []
    for module, path in MODULES.items():
        if module in REGISTRY_MODULES:
            continue
        for line, listed in _listed_names(ast.parse(path.read_text()), REGISTERED_NAMES):
            found.append(f"{module}:{line} lists {sorted(listed)}")
    assert found == []


def test_the_names_rule_catches_a_list_of_any_length():
    names = {"AVG", "range", "sticky", "uniform"}
    caught = [
        '_ASSIGNORS = ("range", "sticky")',
        'KNOWN = ["AVG"]',
        'CLASSES = {"range": object}',
        'BY_JAVA = {"Averagely": "AVG", "Circle": "range"}',
        'help = "one of range|sticky"',
        "message = \"expected names ('AVG, sticky')\"",
        'message = "use range or sticky"',
        'if name in ("uniform", "other"): pass',
    ]
    for source in caught:
        assert _listed_names(ast.parse(source), names), source
    fine = [
        'default = "range"',
        'if name == "sticky": pass',
        'def f():\n    """range, sticky and AVG."""',
        'message = "sticky needs a previous assignment: use AVG"',
        'DEFAULT_MIX = (["AVG", "range"], [0.5, 0.5])',
        'config = {"name": "AVG", "virtualNodeCnt": 3}',
    ]
    for source in fine:
        assert not _listed_names(ast.parse(source), names), source


#: ``mqbalance.fleet``'s modules (named below ``mqbalance.fleet``), bottom to top (the pictures of
#: its docstrings): a module may import only fleet modules of a lower rank, and inside a function
#: only these optional heavy packages. The shared modules sit apart from the two kinds.
FLEET_SHARED = {"findings": 0, "shipping": 0, "spark": 1, "drain": 1, "report": 1}
FLEET_ROCKETMQ = {
    "rocketmq": 0,
    "rocketmq.example": 0,
    "rocketmq.schemas": 0,
    "rocketmq.checks": 1,
    "rocketmq.lag_time": 1,
    "rocketmq.snapshot": 2,
    "rocketmq.from_json": 3,
    "rocketmq.from_arrow": 3,
    "rocketmq.assignment": 3,
    "rocketmq.churn": 3,
    "rocketmq.what_if": 3,
    "rocketmq.files": 4,
    "rocketmq.live": 4,
    "rocketmq.facts": 4,
    "rocketmq.audit": 5,
    "rocketmq.spark": 6,
}
FLEET_KAFKA = {
    "kafka": 0,
    "kafka.messages": 0,
    "kafka.lag_time": 0,
    "kafka.group_log": 0,
    "kafka.wire": 0,
    "kafka.snapshot": 1,
    "kafka.live": 2,
    "kafka.audit": 2,
    "kafka.spark": 3,
}
FLEET_LAYERS = {**FLEET_SHARED, **FLEET_ROCKETMQ, **FLEET_KAFKA, "__init__": 7}
FLEET_LAZY_IMPORTS = {"pyspark", "matplotlib"}


def _fleet_name(module: str) -> str:
    return "__init__" if module == "mqbalance.fleet" else module.removeprefix("mqbalance.fleet.")


def test_fleet_modules_are_layered_one_way_without_imports_in_functions():
    fleet = {_fleet_name(m): m for m in MODULES if m == "mqbalance.fleet" or m.startswith("mqbalance.fleet.")}
    assert fleet.keys() == FLEET_LAYERS.keys()  # a new module takes its place in the layers
    for name, module in fleet.items():
        for imported, nested, line in _imports(module):
            where = f"{module}:{line} imports {imported}"
            if nested:
                assert imported.split(".")[0] in FLEET_LAZY_IMPORTS, f"{where} inside a function"
            target = _target(imported) if imported.startswith("mqbalance.fleet") else None
            if target == "mqbalance.fleet":
                assert name == "__init__", f"{where}: the package is on top"
            elif target is not None and target != module:
                below = _fleet_name(target)
                assert FLEET_LAYERS[below] < FLEET_LAYERS[name], f"{where}, not below it"
                # one interface, two kinds: the shared modules know no kind, and no kind the other
                if name in FLEET_SHARED:
                    assert below in FLEET_SHARED, f"{where}: a shared module imports a kind's"
                if name in FLEET_ROCKETMQ:
                    assert below not in FLEET_KAFKA, f"{where}: RocketMQ's modules import Kafka's"
                if name in FLEET_KAFKA:
                    assert below not in FLEET_ROCKETMQ, f"{where}: Kafka's modules import RocketMQ's"
    picture = "findings, shipping  <  spark, drain  <  rocketmq, kafka  <  report  <  mqbalance.fleet"
    assert picture in (importlib.import_module("mqbalance.fleet").__doc__ or "")
