"""Run the network-fault scenarios (``pytest -m nemesis``) for N rounds each and write their tables.

    python tests/nemesis_report.py --rounds 5 --out out/nemesis        # as root; make nemesis does this

Each scenario test appends one JSON row to ``$MQBALANCE_NEMESIS_OUT`` (``nemesis_zk.write_result``);
this script sets that file, runs pytest once, and writes ``<out>/nemesis.md``: one table per
scenario — rounds, invariant violations, time to own every queue again (median / max), queue-seconds
paused (median / max per round), duplicates, and the scenario's own figures — headed by the command
that produced it. Exit code: pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # tests/


def render(rows: list[dict[str, object]], command: str, seconds: float) -> str:
    out = [f"Produced by `{command}` ({seconds / 60:.1f} min on this machine).", ""]
    for row in sorted(rows, key=lambda r: str(r["scenario"])):
        out.append(f"**{row['scenario']}**")
        out.append("")
        out.append("| figure | value |")
        out.append("|---|---|")
        for k, v in row.items():
            if k != "scenario":
                out.append(f"| {k} | {v} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of every scenario (MQBALANCE_NEMESIS_ROUNDS)")
    ap.add_argument("--out", type=Path, default=Path("out/nemesis"))
    ap.add_argument("-k", default=None, help="only the tests matching this pytest -k expression")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows_file = args.out / "rows.jsonl"
    rows_file.unlink(missing_ok=True)
    env = {**os.environ, "MQBALANCE_NEMESIS_ROUNDS": str(args.rounds), "MQBALANCE_NEMESIS_OUT": str(rows_file)}
    cmd = [sys.executable, "-m", "pytest", "-m", "nemesis", "-q", "-p", "no:cacheprovider", str(HERE)]
    if args.k:
        cmd += ["-k", args.k]
    t0 = time.monotonic()
    rc = subprocess.call(cmd, env=env, cwd=HERE.parent)
    seconds = time.monotonic() - t0
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()] if rows_file.exists() else []
    command = f"python tests/nemesis_report.py --rounds {args.rounds}" + (f" -k '{args.k}'" if args.k else "")
    table = render(rows, command, seconds)
    (args.out / "nemesis.md").write_text(table + "\n")
    print(table)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
