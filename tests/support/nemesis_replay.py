"""Send, from the namespace it runs in, the late request of a zombie and print what ZooKeeper said
(one JSON line). Run by :func:`nemesis_zk.replay`: ``python nemesis_replay.py HOSTS ACTION_JSON``.

* ``{"kind": "commit", "group", "topic", "partition", "offset", "offset_version"}``: the fenced
  commit of :meth:`mqbalance.coordination.claims.Claims.commit` — check the owner node, set the
  offset node at the version the zombie last wrote;
* ``{"kind": "publish", "group", "election_node", "assignment_version"}``: the leader's publication
  of :mod:`mqbalance.coordination.leader` — check the (old) election node, set the assignment node.
"""

from __future__ import annotations

import json
import sys

from kazoo.client import KazooClient

from mqbalance.coordination import GroupPaths


def main(hosts: str, action: dict) -> dict:
    paths = GroupPaths(action["group"])
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=20)
    try:
        if action["kind"] == "commit":
            offset_path = paths.offset(action["topic"], action["partition"])
            before = client.get(offset_path)[0].decode()
            tx = client.transaction()
            tx.check(paths.owner(action["topic"], action["partition"]), 0)
            tx.set_data(offset_path, str(action["offset"]).encode(), action["offset_version"])
            result = tx.commit()
            after = client.get(offset_path)[0].decode()
        else:
            before = client.get(paths.assignment)[0].decode()
            tx = client.transaction()
            tx.check(action["election_node"], 0)
            tx.set_data(paths.assignment, b'{"generation":999999,"leader":"zombie"}', action["assignment_version"])
            result = tx.commit()
            after = client.get(paths.assignment)[0].decode()
        errors = [type(r).__name__ for r in result if isinstance(r, Exception)]
        return {"refused": bool(errors), "errors": errors, "before": before, "after": after}
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]))))
