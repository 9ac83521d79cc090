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
from mqbalance.allocation.registry import StrategySpec
from mqbalance.sim.engine import Simulation
from mqbalance.sim.metrics import MetricsRecorder, SimulationResult
from mqbalance.sim.model import (
    Crash,
    Join,
    Leave,
    NetworkChange,
    NotificationSwitch,
    Partition,
    QueueCountChange,
    Scenario,
    ScenarioEvent,
)
from mqbalance.sim.scenario import (
    ScenarioError,
    bundled_scenarios,
    load_scenario,
    scenario_from_dict,
    scenario_strategy,
)

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
    "Partition",
    "ScenarioError",
    "scenario_strategy",
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


def _with_strategy(s: Scenario, config: Any, where: str) -> Scenario:
    """``s`` under strategy ``config`` (a name keeps the scenario's parameters when it names the
    scenario's own strategy), checked exactly as a scenario file's ``group.strategy`` is."""
    spec = scenario_strategy(config, where)
    return s.with_strategy(s.strategy if isinstance(config, str) and spec.name is s.strategy.name else spec)


def simulate(
    scenario: Scenario | dict[str, Any] | str | Path,
    *,
    strategy: str | StrategySpec | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimulationResult:
    """Run a scenario (object, mapping, file or bundled name), optionally under another strategy."""
    s = _scenario(scenario)
    chosen = _with_strategy(s, strategy, "strategy") if strategy is not None else s
    return Simulation(chosen, progress=progress).run()


def compare(
    scenario: Scenario | dict[str, Any] | str | Path,
    strategies: list[str | StrategySpec] | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[SimulationResult]:
    """The same scenario once per strategy (default: the scenario's ``compare`` list, else its own
    strategy). Every strategy name is checked before the first run."""
    s = _scenario(scenario)
    if strategies is not None and not_a_collection(strategies):
        raise ScenarioError(f"strategies must be a list of strategy names, not {strategies!r}", strategies)
    names: list[Any] = list(strategies or ()) or list(s.compare) or [s.strategy]
    sims = [Simulation(_with_strategy(s, n, f"strategies[{i}]"), progress=progress) for i, n in enumerate(names)]
    return [sim.run() for sim in sims]
