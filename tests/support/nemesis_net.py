"""Real kernel networking for the network-fault ("nemesis") tests: one Linux network namespace per
process under test, joined to the root namespace by a veth pair, and faults made by the kernel.

* :class:`Network` — the namespaces of one test. ``net.node("m0")`` creates namespace
  ``mqbn<pid>-<n>-m0`` with a veth pair ``mqbn<pid>-<k>h`` (root side) / ``...n`` (inside), the
  addresses of a /30 of ``198.18.0.0/15`` (RFC 2544's block for test networks, routed nowhere;
  ``.1`` root side, ``.2`` inside) and one route, ``198.18.0.0/15`` via the root side: a process
  inside reaches the root namespace and the other namespaces of the test through that one path, and
  nothing else (no default route; every address is on this machine). Namespace-to-namespace
  traffic is routed by the root namespace: forwarding is switched on for the harness's veths only
  (``net.ipv4.conf.<veth>.forwarding``), never for the machine's own interfaces.
* Faults: :meth:`Network.partition` takes the root side of a node's veth down — the node keeps its
  address and route, its packets vanish, established TCP connections hang without a reset, exactly
  a pulled cable; :meth:`Network.cut` drops the packets between two nodes only (a ``blackhole``
  policy-routing rule in the root namespace for each direction, so forwarded packets vanish
  silently and both nodes stay reachable by everyone else). :meth:`Network.heal` undoes both.
* Processes: :meth:`Node.popen` runs a command inside (``ip netns exec``); :meth:`Network.close`
  stops them by PID (and any other process left in the namespace, by ``ip netns pids``), removes the
  rules and deletes the namespaces by name (their veths go with them). :func:`sweep` removes what
  an earlier run that crashed left behind: every ``mqbn<pid>-`` namespace, link and rule whose
  ``<pid>`` is no longer alive.

A test that cannot create a namespace fails with one line saying why (not root, no ``ip``, the
kernel refused) — it never skips.

>>> [n.label for n in Network("doc").nodes]  # nothing is created before ``node()``
[]
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Every namespace and link this harness makes starts with this, then the creating process's pid in hex.
PREFIX = "mqbn"
#: The block the /30s of the namespaces come from (RFC 2544: for test networks, routed nowhere).
BLOCK = ipaddress.ip_network("198.18.0.0/15")
#: Priority of the root namespace's blackhole rules (before the main table's 32766).
RULE_PRIORITY = 1000
LOCK = Path("/run/mqbalance-nemesis.lock")
CONF = Path("/proc/sys/net/ipv4/conf")
_NAME = re.compile(rf"^{PREFIX}([0-9a-f]+)-")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cp = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if check and cp.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {cp.stderr.strip() or cp.returncode}")
    return cp


def require_netns() -> None:
    """Fail the calling test with one line if namespaces cannot be made here."""
    why = netns_unavailable()
    if why:
        pytest.fail(f"network namespaces unavailable: {why}", pytrace=False)


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made here, or ``None`` when they can (checked by making one)."""
    if os.geteuid() != 0:
        return f"not running as root (euid {os.geteuid()}): ip netns needs CAP_NET_ADMIN and CAP_SYS_ADMIN"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed: apt-get install -y iproute2"
    probe = f"{PREFIX}{os.getpid():x}-probe"
    cp = _ip("netns", "add", probe, check=False)
    if cp.returncode != 0:
        return f"`ip netns add` failed: {cp.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _owner_pid(name: str) -> int | None:
    m = _NAME.match(name)
    return int(m.group(1), 16) if m else None


def sweep() -> list[str]:
    """Delete the namespaces, links and rules of earlier runs whose process is gone; returns their names."""
    removed: list[str] = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        pid = _owner_pid(name)
        if pid is not None and not _alive(pid):
            for p in _ip("netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(p), signal.SIGKILL)
            _ip("netns", "del", name, check=False)
            removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        parts = line.split(":")
        name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
        pid = _owner_pid(name)
        if pid is not None and not _alive(pid):
            _ip("link", "del", name, check=False)
            removed.append(name)
    for rule in _rules():
        if rule.pid is None or not _alive(rule.pid):
            _ip(
                "rule",
                "del",
                "priority",
                str(RULE_PRIORITY),
                "from",
                rule.src,
                "to",
                rule.dst,
                "blackhole",
                check=False,
            )
            removed.append(f"rule {rule.src}->{rule.dst}")
    return removed


@dataclass(frozen=True)
class _Rule:
    src: str
    dst: str
    pid: int | None


def _rules() -> list[_Rule]:
    """The harness's blackhole rules (their owner: the pid whose namespace holds the source; ``None``
    once that namespace is gone)."""
    owners = _address_owners()
    out = []
    for line in _ip("rule", "show", "priority", str(RULE_PRIORITY), check=False).stdout.splitlines():
        m = re.search(r"from (\S+) to (\S+) blackhole", line)
        if m and ipaddress.ip_address(m.group(1)) in BLOCK:
            out.append(_Rule(m.group(1), m.group(2), owners.get(m.group(1))))
    return out


def _address_owners() -> dict[str, int | None]:
    """Addresses of the harness's veths (the root side ``.1`` and the inside ``.2``) → owning pid."""
    out: dict[str, int | None] = {}
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        name, iface = parts[1].split("@")[0], ipaddress.ip_interface(parts[3])
        if iface.ip in BLOCK:
            pid = _owner_pid(name)
            out[str(iface.ip)] = pid
            out[str(iface.ip + 1)] = pid
    return out


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _free_block() -> ipaddress.IPv4Network:
    used = set()
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and ipaddress.ip_interface(parts[3]).ip in BLOCK:
            used.add(ipaddress.ip_interface(parts[3]).network)
    for net in BLOCK.subnets(new_prefix=30):
        if net not in used:
            return net
    raise RuntimeError(f"no free /30 left in {BLOCK}")


@dataclass
class Node:
    """One namespace: ``addr`` inside, ``gateway`` the root side (where the root namespace answers it)."""

    label: str
    netns: str
    host_if: str
    addr: str
    gateway: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def popen(self, cmd: Sequence[str], *, log: Path | None = None, **kw: Any) -> subprocess.Popen[bytes]:
        """Start ``cmd`` inside the namespace (its pid is the command's: ``ip netns exec`` execs it)."""
        out: Any = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
        try:
            p = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, *cmd],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                **kw,
            )
        finally:
            if log is not None:
                out.close()
        self.procs.append(p)
        return p

    def run(self, cmd: Sequence[str], *, timeout: float = 30.0, **kw: Any) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` inside and wait for it."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *cmd], capture_output=True, text=True, timeout=timeout, **kw
        )


class Network:
    """The namespaces of one test (see the module)."""

    _serial = 0
    _links = 0

    def __init__(self, label: str) -> None:
        Network._serial += 1
        self.tag = f"{PREFIX}{os.getpid():x}-{Network._serial}"
        self.label = label
        self.nodes: list[Node] = []
        self._cuts: set[tuple[str, str]] = set()
        self._down: set[str] = set()

    def __repr__(self) -> str:
        return f"Network({self.label!r}, tag={self.tag!r}, nodes={[n.label for n in self.nodes]})"

    def node(self, label: str) -> Node:
        """Create a namespace with its veth pair, addresses and route."""
        if not re.fullmatch(r"[a-z0-9]{1,8}", label):
            raise ValueError(f"node label must be 1-8 of [a-z0-9], got {label!r}")
        Network._links += 1
        netns = f"{self.tag}-{label}"
        link = f"{PREFIX}{os.getpid():x}-{Network._links}"
        host_if, inner_if = f"{link}h", f"{link}n"
        if len(host_if) > 15:
            raise RuntimeError(f"link name {host_if!r} longer than 15 characters")
        with _locked():
            block = _free_block()
            gw, addr = str(block.network_address + 1), str(block.network_address + 2)
            _ip("netns", "add", netns)
            node = Node(label, netns, host_if, addr, gw)
            self.nodes.append(node)
            _ip("link", "add", host_if, "type", "veth", "peer", "name", inner_if)
            _ip("link", "set", inner_if, "netns", netns)
            _ip("addr", "add", f"{gw}/30", "dev", host_if)
            (CONF / host_if / "forwarding").write_text("1\n")  # route between the harness's veths only
            _ip("link", "set", host_if, "up")
        _ip("-n", netns, "addr", "add", f"{addr}/30", "dev", inner_if)
        _ip("-n", netns, "link", "set", "lo", "up")
        _ip("-n", netns, "link", "set", inner_if, "up")
        _ip("-n", netns, "route", "add", str(BLOCK), "via", gw)
        return node

    def get(self, label: str) -> Node:
        for n in self.nodes:
            if n.label == label:
                return n
        raise KeyError(label)

    # ------------------------------------------------------------------ faults
    def partition(self, node: Node) -> None:
        """Pull the node's cable: its packets (both ways) vanish from now on."""
        _ip("link", "set", node.host_if, "down")
        self._down.add(node.host_if)

    def cut(self, a: Node, b: Node) -> None:
        """Drop every packet between ``a`` and ``b`` (both directions); both still reach everyone else."""
        for src, dst in ((a.addr, b.addr), (b.addr, a.addr)):
            if (src, dst) not in self._cuts:
                _ip("rule", "add", "priority", str(RULE_PRIORITY), "from", src, "to", dst, "blackhole")
                self._cuts.add((src, dst))

    def heal(self, *nodes: Node) -> None:
        """Undo the faults touching ``nodes`` (every fault when none is given)."""
        addrs = {n.addr for n in nodes}
        for node in self.nodes:
            if node.host_if in self._down and (not nodes or node.addr in addrs):
                _ip("link", "set", node.host_if, "up")
                self._down.discard(node.host_if)
        for src, dst in list(self._cuts):
            if not nodes or src in addrs or dst in addrs:
                _ip("rule", "del", "priority", str(RULE_PRIORITY), "from", src, "to", dst, "blackhole", check=False)
                self._cuts.discard((src, dst))

    # ------------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Stop every process started in the namespaces (by PID), remove the rules, delete the namespaces."""
        for node in self.nodes:
            for p in node.procs:
                if p.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        p.send_signal(signal.SIGCONT)
                        p.kill()
        for node in self.nodes:
            for p in node.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(10)
            for pid in _ip("netns", "pids", node.netns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
        for src, dst in list(self._cuts):
            _ip("rule", "del", "priority", str(RULE_PRIORITY), "from", src, "to", dst, "blackhole", check=False)
        self._cuts.clear()
        for node in self.nodes:
            for _ in range(50):
                _ip("netns", "del", node.netns, check=False)
                if not Path(f"/run/netns/{node.netns}").exists():
                    break
                time.sleep(0.1)
            _ip("link", "del", node.host_if, check=False)
        self.nodes.clear()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
