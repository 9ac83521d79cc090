"""The fixtures of the network-fault tests (``pytest_plugins = ["nemesis_plugin"]``). ``network``:
a :class:`nemesis_net.Network` for one test — leftovers of crashed runs swept first, everything of
this one (processes, rules, namespaces) deleted afterwards, whether the test passed or not. A
machine where namespaces cannot be made fails the test with one line saying why. ``zk_ensemble``:
a three-server ZooKeeper quorum in three namespaces of it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from nemesis_net import Network, require_netns, sweep
from zk_fixture import ZooKeeperEnsemble


@pytest.fixture
def network(request: pytest.FixtureRequest) -> Iterator[Network]:
    require_netns()
    sweep()
    net = Network(re.sub(r"[^a-z0-9]", "", request.node.name.lower())[:20] or "test")
    try:
        yield net
    finally:
        net.close()


@pytest.fixture
def zk_ensemble(network: Network, tmp_path: Path) -> Iterator[ZooKeeperEnsemble]:
    """Three ZooKeeper servers (the Debian package), each in its own namespace of ``network``
    (labels ``zk0``-``zk2``), serving as a quorum: one leader, two followers."""
    ens = ZooKeeperEnsemble([network.node(f"zk{i}") for i in range(3)], tmp_path / "ensemble")
    try:
        yield ens.start()
    finally:
        ens.close()
