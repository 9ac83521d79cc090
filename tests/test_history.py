"""``mqbalance history``: the analysis of a history dataset on Spark (local mode), over a dataset
written by the real writer with planted events — an episode with a known unowned period, a
flapping member, and queues planted to be OK, STALL, REWIND and STOP by Burrow's rules. The
expected values come from the plan below, not from the analysis."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import browser
from kafka_cluster import MQBALANCE
from mqbalance.exceptions import HistoryError
from mqbalance.fleet.spark import local_session, stop_session
from mqbalance.history.analysis import burrow_status
from mqbalance.history.job import analyse
from mqbalance.history.report import write_history_outputs
from mqbalance.history.spans import combine_spans
from mqbalance.history.writer import HistoryWriter

T0 = dt.datetime(2026, 11, 25, 1, 0, tzinfo=dt.UTC)
QUEUES = [("T", "b", q) for q in range(4)]


def q(topic: str, broker: str, queue_id: int) -> dict[str, Any]:
    return {"topic": topic, "broker_name": broker, "queue_id": queue_id}


def plan() -> dict[int, dict[str, list[dict[str, Any]]]]:
    """Events by second after T0."""
    at: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    first = at[0]
    first["members"] = [{"event": "checkpoint", "group": "g1", "client_id": "c1", "client_addr": "a1"}]
    first["ownership"] = [
        {"event": "checkpoint", "group": "g1", **q(*x), "owner": "c1", "processes": 1} for x in QUEUES
    ]
    first["ownership"] += [{"event": "checkpoint", "group": "g2", **q("U", "b", 0), "owner": "d1", "processes": 1}]
    first["members"] += [{"event": "checkpoint", "group": "g2", "client_id": "d1", "client_addr": "x"}]
    # episode 0 at 100 s: c2 joins; queues 2 and 3 are owned by nobody for 10 s, then by c2
    at[100]["members"].append({"event": "join", "group": "g1", "client_id": "c2", "client_addr": "a2"})
    at[100]["ownership"] += [
        {"event": "change", "group": "g1", **q(*x), "owner": None, "processes": 0} for x in QUEUES[2:]
    ]
    at[110]["ownership"] += [
        {"event": "change", "group": "g1", **q(*x), "owner": "c2", "processes": 1} for x in QUEUES[2:]
    ]
    # a flapping member: joins and leaves 4 times, 10 s apart, cycles 200 s apart (4 more episodes)
    for k in range(4):
        s = 300 + 200 * k
        at[s]["members"].append({"event": "join", "group": "g1", "client_id": "f", "client_addr": "af"})
        at[s + 10]["members"].append({"event": "leave", "group": "g1", "client_id": "f", "client_addr": "af"})
    # g2's only member leaves at 400 s: its queue owned by nobody from then on
    at[400]["members"].append({"event": "leave", "group": "g2", "client_id": "d1", "client_addr": "x"})
    at[400]["ownership"].append({"event": "change", "group": "g2", **q("U", "b", 0), "owner": None, "processes": 0})
    # offsets read every 60 s: q0 consumed (OK), q1 stalled, q2 rewound, U/0 stopped
    for k, s in enumerate(range(0, 1201, 60)):
        rows = at[s]["offsets"]
        lag0 = 5 if k % 2 else 0
        rows.append(
            {"event": "change", "group": "g1", **q("T", "b", 0), "committed": 10 * k, "max_offset": 10 * k + lag0}
        )
        rows.append({"event": "change", "group": "g1", **q("T", "b", 1), "committed": 5, "max_offset": 6 + k})
        back = 3 if k == 18 else 4 + k
        rows.append({"event": "change", "group": "g1", **q("T", "b", 2), "committed": back, "max_offset": 100})
        committed = min(k, 6) * 2
        rows.append({"event": "change", "group": "g2", **q("U", "b", 0), "committed": committed, "max_offset": 50 + k})
        rows.append({"event": "change", "group": "g1", **q("T", "b", 3), "committed": 0, "max_offset": 0})
    return at


def write(root: Path) -> None:
    w = HistoryWriter(root, run_id="plan")
    readings = set(range(0, 1201, 60))
    for tick_id, s in enumerate(sorted(set(plan()) | readings), start=1):
        events = plan()[s]
        w.commit_tick(
            tick_id,
            T0 + dt.timedelta(seconds=s),
            dict(events),
            {"kind": "both" if s in readings else "membership", "checkpoint": s == 0, "duration_ms": 5,
             "skipped_before": 0, "clock_jump_ms": 0, "groups": 2, "changed_groups": 1, "requests": 4, "errors": 0},
        )  # fmt: skip
    w.close()


@pytest.fixture(scope="module")
def spark() -> Any:
    session = local_session(fast_start=True, driver_memory="1g")
    yield session
    stop_session(session)


def test_history_finds_the_planted_episodes_flapping_and_health(spark: Any, tmp_path: Path) -> None:
    write(tmp_path / "h")
    result = analyse(spark, tmp_path / "h", window=60, min_cycles=3, min_episodes=5)
    g1 = [e for e in result.episodes if e["group"] == "g1"]
    assert len(g1) == 5
    first = g1[0]
    assert first["joined"] == [["c2", "a2"]] and first["left"] == []
    assert first["owned_again_s"] == 10.0 and first["unowned_queue_s"] == 20.0 and first["queue_changes"] == 4
    assert [(e["joined"], e["left"]) for e in g1[1:]] == [([["f", "af"]], [["f", "af"]])] * 4
    assert [e["causes"] for e in result.episodes] == [["joined: c2 (a2)"]] + [
        ["joined: f (af)", "left: f (af)"]
    ] * 4 + [["left: d1 (x)"]]
    assert [dt.datetime.fromisoformat(e["start"]) - T0 for e in g1[1:]] == [
        dt.timedelta(seconds=300 + 200 * k) for k in range(4)
    ]
    assert [(f["group"], f["client_id"], f["cycles"]) for f in result.flapping_clients] == [("g1", "f", 4)]
    assert result.flapping_groups == [{"group": "g1", "episodes": 5}]
    status = {(h["group"], h["queue_id"]): h["status"] for h in result.health}
    assert status == {("g1", 0): "OK", ("g1", 1): "STALL", ("g1", 2): "REWIND", ("g1", 3): "OK", ("g2", 0): "STOP"}
    lag = {(h["group"], h["queue_id"]): h["lag"] for h in result.health}
    assert lag[("g1", 1)] == 6 + 20 - 5 and lag[("g1", 0)] == 0
    # read 101 s at a time: span ends cut episode 0 between its join and its queues' new owner, and
    # two of f's cycles between its join and its leave; put together, the same results
    spans = analyse(spark, tmp_path / "h", window=60, min_cycles=3, min_episodes=5, span=dt.timedelta(seconds=101))
    assert spans == result
    paths = write_history_outputs(result, tmp_path / "out", root=tmp_path / "h")
    assert (tmp_path / "out" / "ownership.png").stat().st_size > 0 and (tmp_path / "out" / "lag.png").stat().st_size > 0
    assert (tmp_path / "out" / "episodes.csv").read_text().count("\n") == 1 + 5 + 1  # g2's leave is an episode too
    assert "STALL" in paths["report_md"].read_text() and (tmp_path / "out" / "episodes_per_hour.png").stat().st_size > 0
    only = analyse(spark, tmp_path / "h", groups=["g2"], start=T0 + dt.timedelta(seconds=200))
    assert {e["group"] for e in only.episodes} == {"g2"} and len(only.episodes) == 1
    # in this process (no Spark): the same results, whole, in spans and for one group
    assert analyse(None, tmp_path / "h", window=60, min_cycles=3, min_episodes=5) == result
    assert analyse(None, tmp_path / "h", window=60, span=dt.timedelta(seconds=101)) == spans
    assert analyse(None, tmp_path / "h", groups=["g2"], start=T0 + dt.timedelta(seconds=200)) == only


def test_history_finds_duplicated_client_ids_both_ways(spark: Any, tmp_path: Path) -> None:
    """Id ``d`` is listed from two addresses at once for 40 s (a broker listing every connection),
    then its two processes take it from each other three times 10 s apart, on a new connection each
    time (a broker keeping one connection per id); id ``r`` restarts on a new address twice, 100 s
    apart, which is not a duplicate."""

    def m(event: str, cid: str, addr: str) -> dict[str, Any]:
        return {"event": event, "group": "g3", "client_id": cid, "client_addr": addr}

    at: dict[int, list[dict[str, Any]]] = {
        0: [m("checkpoint", "d", "p1"), m("checkpoint", "r", "r1")],
        100: [m("leave", "r", "r1"), m("join", "r", "r2")],
        200: [m("leave", "r", "r2"), m("join", "r", "r3")],
        600: [m("join", "d", "p2")],
        640: [m("leave", "d", "p2")],
        800: [m("leave", "d", "p1"), m("join", "d", "p3")],
        810: [m("leave", "d", "p3"), m("join", "d", "p4")],
        820: [m("leave", "d", "p4"), m("join", "d", "p5")],
        1000: [],
    }
    w = HistoryWriter(tmp_path / "h", run_id="dup")
    for tick_id, s in enumerate(sorted(at), start=1):
        w.commit_tick(
            tick_id,
            T0 + dt.timedelta(seconds=s),
            {"members": at[s]},
            {"kind": "membership", "checkpoint": s == 0, "duration_ms": 5, "skipped_before": 0, "clock_jump_ms": 0,
             "groups": 1, "changed_groups": 1, "requests": 1, "errors": 0},
        )  # fmt: skip
    w.close()
    result = analyse(spark, tmp_path / "h", window=60)
    got = [
        (d["client_id"], d["addresses"], d["how"], *(dt.datetime.fromisoformat(d[k]) - T0 for k in ("start", "end")))
        for d in result.duplicate_ids
    ]
    seconds = dt.timedelta(seconds=1)
    assert got == [
        ("d", ["p1", "p2"], "listed twice", 600 * seconds, 640 * seconds),
        ("d", ["p1", "p3", "p4", "p5"], "alternating", 800 * seconds, 820 * seconds),
    ]
    with_dup = {(dt.datetime.fromisoformat(e["start"]) - T0).seconds: e["duplicated_ids"] for e in result.episodes}
    assert with_dup == {100: [], 200: [], 600: ["d"], 800: ["d"]}
    # span ends at 606 s and 808 s cut both periods; put together, the same periods
    assert analyse(spark, tmp_path / "h", window=60, span=dt.timedelta(seconds=101)) == result
    assert analyse(None, tmp_path / "h", window=60) == result  # in this process: the same
    paths = write_history_outputs(result, tmp_path / "out")
    assert paths["duplicate_ids"].read_text().count("\n") == 1 + 2
    assert "| g3 | d | p1, p2 |" in paths["report_md"].read_text()


def test_every_episode_says_why(spark: Any, tmp_path: Path) -> None:
    """Planted: a subscription gaining a topic (and its queues), a broker going away, a member
    reporting another strategy joining, a topic's queue count growing; each an episode whose
    causes name what changed, on Spark and in process, whole and cut by spans."""

    def own(event: str, topic: str, broker: str, queue_id: int, owner: str | None = "c1") -> dict[str, Any]:
        return {
            "event": event,
            "group": "g",
            **q(topic, broker, queue_id),
            "owner": owner,
            "processes": int(bool(owner)),
        }

    def group(event: str, subscriptions: list[str]) -> dict[str, Any]:
        return {"event": event, "group": "g", "message_model": "CLUSTERING", "subscriptions": subscriptions}

    member = {"group": "g", "client_id": "c1", "client_addr": "a1", "strategy": "AVG"}
    at: dict[int, dict[str, list[dict[str, Any]]]] = {
        0: {
            "groups": [group("checkpoint", ["T"])],
            "members": [{"event": "checkpoint", **member}],
            "ownership": [own("checkpoint", "T", b, i) for b in ("b", "b2") for i in range(2)],
        },
        100: {
            "groups": [group("subscription", ["T", "V"])],
            "ownership": [own("change", "V", "b", i) for i in range(2)],
        },
        300: {"ownership": [own("remove", "T", "b2", i) for i in range(2)]},
        500: {
            "members": [
                {"event": "join", **member, "client_id": "c2", "client_addr": "a2", "strategy": "CONSISTENT_HASH"}
            ],
            "ownership": [own("change", "T", "b", 1, "c2")],
        },
        700: {"ownership": [own("change", "T", "b", 2)]},
        900: {},
    }
    w = HistoryWriter(tmp_path / "h", run_id="why")
    for tick_id, s in enumerate(sorted(at), start=1):
        w.commit_tick(
            tick_id,
            T0 + dt.timedelta(seconds=s),
            at[s],
            {"kind": "membership", "checkpoint": s == 0, "duration_ms": 5, "skipped_before": 0, "clock_jump_ms": 0,
             "groups": 1, "changed_groups": 1, "requests": 1, "errors": 0},
        )  # fmt: skip
    w.close()
    result = analyse(spark, tmp_path / "h", window=60)
    got = {(dt.datetime.fromisoformat(e["start"]) - T0).seconds: e["causes"] for e in result.episodes}
    assert got == {
        100: ["subscription changed: +V", "queues added: V on b (2)"],
        300: ["broker gone: b2 (2 queues)"],
        500: ["joined: c2 (a2)", "strategies differ: AVG (c1); CONSISTENT_HASH (c2)"],
        700: ["queues added: T on b (1)", "strategies differ: AVG (c1); CONSISTENT_HASH (c2)"],
    }
    assert analyse(None, tmp_path / "h", window=60) == result
    assert analyse(None, tmp_path / "h", window=60, span=dt.timedelta(seconds=150)) == result
    report = write_history_outputs(result, tmp_path / "out")["report_md"].read_text()
    assert "| – | – | broker gone: b2 (2 queues) |" in report
    assert "| c2 (a2) | – | strategies differ: AVG (c1); CONSISTENT_HASH (c2) |" in report


def test_spans_are_put_together_per_group_whatever_order_the_groups_come_in() -> None:
    """Group ``a``'s episode is cut by a span's end; group ``b``'s rows come between its two halves
    (Spark returns groups in no set order). ``a``'s halves are one episode, ``b``'s is its own."""

    def ep(start: int, end: int, who: str, owned: float | None) -> dict[str, Any]:
        when = {k: (T0 + dt.timedelta(seconds=v)).isoformat() for k, v in (("start", start), ("end", end))}
        return {**when, "episode": 0, "joined": [[who, "x"]], "left": [], "queue_changes": 1,
                "owned_again_s": owned, "unowned_queue_s": 10.0, "double_owned_queue_s": 0.0}  # fmt: skip

    def prefix(idle: float, has: bool) -> dict[str, Any]:
        return {"unowned_queue_s": idle, "double_owned_queue_s": 0.0, "owned_at": None, "queue_changes": 0,
                "has_episodes": has}  # fmt: skip

    parts = [
        ("a", "prefix", prefix(0, True)),
        ("a", "episode", ep(90, 95, "a1", None)),  # open at the span's end, 100 s
        ("b", "prefix", prefix(0, True)),
        ("b", "episode", ep(50, 50, "b1", 1.0)),
        ("b", "prefix", prefix(0, True)),  # the next span: b first this time
        ("b", "episode", ep(150, 150, "b2", 1.0)),
        ("a", "prefix", prefix(5.0, True)),
        ("a", "episode", ep(102, 104, "a2", 3.0)),  # 7 s after a's last change: the same episode
    ]
    result = combine_spans(parts, window=60, min_cycles=3, min_episodes=5)
    a = [e for e in result.episodes if e["group"] == "a"]
    assert len(a) == 1 and a[0]["joined"] == [["a1", "x"], ["a2", "x"]]
    assert a[0]["unowned_queue_s"] == 10.0 + 5.0 + 10.0 and a[0]["owned_again_s"] == 102 + 3 - 90
    assert [e["joined"] for e in result.episodes if e["group"] == "b"] == [[["b1", "x"]], [["b2", "x"]]]


@pytest.mark.parametrize(
    ("window", "status"),
    [
        ([(0, 10, 5), (60_000, 10, 0), (120_000, 10, 9)], "OK"),  # lag zero once: Burrow's rule 1
        ([(0, 10, 5), (60_000, 9, 7), (120_000, 12, 9)], "REWIND"),
        ([(0, 10, 5), (60_000, 12, 7), (120_000, 14, 9)], "WARN"),  # advancing, lag never decreasing
        ([(0, 10, 5), (60_000, 12, 4), (120_000, 14, 9)], "OK"),  # lag decreased once
        ([(0, 10, 5), (60_000, 10, 7), (120_000, 10, 9)], "STALL"),
        ([(0, 10, 5), (10_000, 11, 7), (20_000, 11, 9)], "STOP"),  # last change 10 s after the first, now 100 s later
    ],
)
def test_burrows_rules_on_hand_written_windows(window: list[tuple[int, int, int]], status: str) -> None:
    assert burrow_status(window, now_ms=window[-1][0] if status != "STOP" else 110_000, owned=True) == status


def test_history_cli_refuses_a_directory_that_is_not_a_history(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("no")
    got = subprocess.run([str(MQBALANCE), "history", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and got.stderr.count("\n") == 1 and "not a mqbalance history" in got.stderr
    with pytest.raises(HistoryError):
        analyse(None, tmp_path)


@pytest.mark.parametrize(("engine", "said"), [("auto", "in this process"), ("spark", "starting Spark")])
def test_history_cli_writes_the_report(tmp_path: Path, engine: str, said: str) -> None:
    """A small history is analysed in process by default; ``--engine spark`` gives the same files."""
    write(tmp_path / "h")
    got = subprocess.run(
        [str(MQBALANCE), "history", str(tmp_path / "h"), "--out", str(tmp_path / "o"), "--engine", engine],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr
    assert said in got.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["episodes"] == 6 and summary["flapping_clients"] == 1
    assert (tmp_path / "o" / "episodes.csv").read_text().count("\n") == 1 + 6


def test_history_cli_refuses_an_in_process_run_with_a_spark_target(tmp_path: Path) -> None:
    write(tmp_path / "h")
    args = [str(MQBALANCE), "history", str(tmp_path / "h"), "--engine", "local", "--master", "local[1]"]
    got = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and got.stderr.count("\n") == 1 and "'local[1]'" in got.stderr


def test_the_html_report_renders_in_headless_chromium(spark: Any, tmp_path: Path) -> None:
    write(tmp_path / "h")
    result = analyse(spark, tmp_path / "h", window=60, min_cycles=3, min_episodes=5)
    paths = write_history_outputs(result, tmp_path / "out", root=tmp_path / "h")
    url = paths["report_html"].resolve().as_uri()
    shot = tmp_path / "report.png"
    browser.headless(tmp_path, f"--screenshot={shot}", "--window-size=1280,3000", url)
    with Image.open(shot) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 20) or []
    inked = sum(n for n, c in colours if c != (255, 255, 255))
    assert inked > 0.02 * 1280 * 3000 and len(colours) > 50, "the page is (nearly) blank"
    dom = browser.headless(tmp_path, "--dump-dom", url).stdout
    for section in ("Rebalance episodes", "Flapping", "Queues not OK", "STALL", "REWIND", "STOP", "flap"):
        assert section in dom, section
    for image in ("episodes_per_hour.png", "ownership.png", "lag.png"):
        assert f'src="{image}"' in dom or f"src='{image}'" in dom, image
