"""A discrete-event simulator of RocketMQ consumer groups (:mod:`.engine`): scenarios as data
(:mod:`.model`, read from YAML/JSON by :mod:`.scenario`), metrics (:mod:`.metrics`), plots
(:mod:`.plot`).

>>> from mqbalance.sim import simulate
>>> r = simulate({"topics": {"T": {"queues_per_broker": 2, "rate": 50}}, "duration": "1m",
...               "group": {"consumers": 2, "throughput": 100}})
>>> r.summary["duplicates"], r.summary["lost"], r.summary["backlog_end"] < 50
(0, 0, True)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqbalance._validate import not_a_collection

from .engine import Simulation
from .metrics import MetricsRecorder, SimulationResult
from .model import (
    Crash,
    Join,
    Leave,
    NetworkChange,
    NotificationSwitch,
    QueueCountChange,
    Scenario,
    ScenarioEvent,
)
from .scenario import ScenarioError, bundled_scenarios, load_scenario, scenario_from_dict

__all__ = [
    "simulate",
    "compare",
    "Simulation",
    "SimulationResult",
    "MetricsRecorder",
    "Scenario",
    "ScenarioEvent",
    "Join",
    "Leave",
    "Crash",
    "QueueCountChange",
    "NetworkChange",
    "NotificationSwitch",
    "ScenarioError",
    "load_scenario",
    "scenario_from_dict",
    "bundled_scenarios",
]


def _scenario(scenario: Scenario | dict[str, Any] | str | Path) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return scenario_from_dict(scenario)
    if not isinstance(scenario, (str, Path)):
        raise ScenarioError(
            f"scenario must be a Scenario, a mapping, a file or a bundled name, got {scenario!r}", scenario
        )
    return load_scenario(scenario)


def _with_strategy(s: Scenario, name: Any, where: str) -> Scenario:
    """``s`` under strategy ``name``, checked exactly as a scenario file's ``group.strategy`` is."""
    from .scenario import checked_strategy

    if not isinstance(name, str):
        raise ScenarioError(f"{where}: expected a strategy name, got {name!r}", name)
    params = dict(s.strategy_params) if name == s.strategy else {}
    return s.with_strategy(checked_strategy(name, params, where))


def simulate(
    scenario: Scenario | dict[str, Any] | str | Path,
    *,
    strategy: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimulationResult:
    """Run a scenario (object, mapping, file or bundled name), optionally under another strategy."""
    s = _scenario(scenario)
    chosen = _with_strategy(s, strategy, "strategy") if strategy is not None else s
    return Simulation(chosen, progress=progress).run()


def compare(
    scenario: Scenario | dict[str, Any] | str | Path,
    strategies: list[str] | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[SimulationResult]:
    """The same scenario once per strategy (default: the scenario's ``compare`` list, else its own
    strategy). Every strategy name is checked before the first run."""
    s = _scenario(scenario)
    if strategies is not None and not_a_collection(strategies):
        raise ScenarioError(f"strategies must be a list of strategy names, not {strategies!r}", strategies)
    names = list(strategies or ()) or list(s.compare) or [s.strategy]
    sims = [Simulation(_with_strategy(s, n, f"strategies[{i}]"), progress=progress) for i, n in enumerate(names)]
    return [sim.run() for sim in sims]
