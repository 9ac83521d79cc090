"""``mqbalance simulate SCENARIO [--strategy S,S...] [--out DIR] [--seed N] [--client-ids L]`` —
run a rebalance scenario (a YAML/JSON file or a bundled name, see ``--list``) through
:mod:`mqbalance.sim`: ``metrics.json``, ``timeline.png`` and ``queues.png`` per strategy,
``compare.json`` and ``compare.png`` when several strategies run. Exit 3 with
``--fail-on-unstable``: a group that never again had every queue pulled exactly once after some
event."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from mqbalance.cli._common import Command, add_out, writable_dir
from mqbalance.exceptions import UsageError
from mqbalance.progress import Progress

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "scenario", nargs="?", help="a scenario file (.yaml/.yml/.json) or the name of a bundled one (see --list)"
    )
    p.add_argument(
        "--strategy", help="comma-separated strategies to run instead of the scenario's (several: a comparison)"
    )
    add_out(p, "out/sim", "output directory (default: out/sim; one folder per scenario)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument(
        "--client-ids",
        choices=["per-connection", "per-client-id"],
        help="how the broker lists connections sharing a client id: per-connection (Java, the id twice: a share "
        "goes to nobody) or per-client-id (the Rust port: the id once, both take the same share); default: the "
        "scenario's broker.client_ids, else per-connection",
    )
    p.add_argument("--list", action="store_true", help="list the bundled scenarios")
    p.add_argument(
        "--fail-on-unstable", action="store_true", help="exit 3 when the group never settles after some event"
    )


def run(args: argparse.Namespace) -> int:
    from mqbalance.sim import bundled_scenarios, compare, load_scenario, scenario_strategy

    if args.list:
        for name, path in bundled_scenarios().items():
            print(f"{name:<26} {load_scenario(path).description.strip()}")
        return 0
    if not args.scenario:
        raise UsageError("simulate: give a scenario file or one of: " + ", ".join(bundled_scenarios()), None)
    scenario = load_scenario(args.scenario)
    if args.seed is not None:
        scenario = dataclasses.replace(scenario, seed=args.seed)
    if args.client_ids is not None:
        scenario = dataclasses.replace(
            scenario, broker=dataclasses.replace(scenario.broker, client_ids=args.client_ids)
        )
    names = [n.strip() for n in (args.strategy or "").split(",") if n.strip()] or None
    for n in names or ():  # the same check a scenario file's strategy gets, before anything runs
        scenario_strategy(n, f"--strategy {n}")
    say = Progress()
    out = writable_dir(str(Path(args.out) / scenario.name), "--out")
    say(f"{scenario.name}: {scenario.duration_ms / 60_000:g} simulated min per strategy")
    results = compare(
        scenario,
        names,
        progress=lambda now, end: (
            say(f"  simulated {now / 60_000:.0f}/{end / 60_000:.0f} min")
            if now % 600_000 < scenario.sample_interval_ms
            else None
        ),
    )
    for result in results:
        folder = out / result.strategy if len(results) > 1 else out
        written = [result.write_json(folder / "metrics.json")]
        try:
            from mqbalance.sim.plot import plot_result

            written += plot_result(result, folder)
        except ImportError:
            say("matplotlib is not installed (pip install 'mqbalance[plot]'): plots skipped")
        print(result.format())
        say(f"wrote {', '.join(str(p) for p in written)}")
    if len(results) > 1:
        table = [
            {
                "strategy": r.strategy,
                **{
                    k: r.summary[k]
                    for k in (
                        "duplicates",
                        "lost",
                        "pause_queue_s",
                        "max_queue_pause_s",
                        "owned_twice_queue_s",
                        "max_time_to_stable_s",
                        "max_backlog",
                        "backlog_end",
                    )
                },
            }
            for r in results
        ]
        (out / "compare.json").write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print()
        w = max(18, *(len(row["strategy"]) for row in table))
        print(
            f"{'strategy':<{w}} {'duplicates':>10} {'pause q-s':>10} {'twice q-s':>10} {'to stable s':>11} "
            f"{'max backlog':>11}"
        )
        for row in table:
            stable = "never" if row["max_time_to_stable_s"] is None else f"{row['max_time_to_stable_s']:.1f}"
            print(
                f"{row['strategy']:<{w}} {row['duplicates']:>10,} {row['pause_queue_s']:>10,.1f} "
                f"{row['owned_twice_queue_s']:>10,.1f} {stable:>11} {row['max_backlog']:>11,}"
            )
        try:
            from mqbalance.sim.plot import plot_comparison

            say(f"wrote {out / 'compare.json'}, {plot_comparison(results, out)}")
        except ImportError:
            say(f"wrote {out / 'compare.json'} (matplotlib missing: no compare.png)")
    unstable = [(r.strategy, e) for r in results for e in r.summary["never_stable_after"]]
    if args.fail_on_unstable and unstable:
        print("never stable after: " + "; ".join(f"{e} [{s}]" for s, e in unstable), file=sys.stderr)
        return 3
    return 0


COMMAND = Command(
    "simulate",
    "simulate a consumer group through a rebalance scenario: duplicates, pauses, backlog, plots",
    add_arguments,
    run,
)
