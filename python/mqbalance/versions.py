"""Which RocketMQ Java client generation to reproduce: one vocabulary for every area.

``Semantics.V4`` (``"4.x"``) and ``Semantics.V5`` (``"5.x"``). What each generation means:

* rebalance (:mod:`mqbalance.rebalance`, client and broker side) —
  ``"4.x"``: ``RebalanceService`` waits 20 s or until woken, new pull requests go out at once, the
  broker notifies ``NOTIFY_CONSUMER_IDS_CHANGED`` for every group (BROADCASTING included);
  ``"5.x"``: also a 1 s minimum interval between rebalances with the adaptive wait (5.2+), new
  pull requests dispatched after 500 ms, the broker fires the ``CLIENT_*`` events and sends no
  change notification for BROADCASTING groups.
* producer fault isolation (:mod:`mqbalance.fault`) —
  ``"4.x"``: the 4.9.x line's ``MQFaultStrategy`` (checked against ``rocketmq-all-4.9.8``): 4.x
  latency tables, a failed send counts as 30 s, ``pickOneAtLeast`` over the sorted ``FaultItem`` list;
  ``"5.x"``: RocketMQ 5.1.4+ (RIP-63: queue filters, reachability, the detector; 5.x tables, a
  failed send counts as 10 s), checked against ``rocketmq-all-5.3.3``.

Where a function takes ``semantics``, it accepts a :class:`Semantics` or its string value.
Attributes always hold the canonical :class:`Semantics`, which compares equal to its string value.

>>> Semantics.parse("4.x") is Semantics.V4, Semantics.parse("5.x") == "5.x"
(True, True)
"""

from __future__ import annotations

from enum import StrEnum

from mqbalance.exceptions import InvalidInputError

__all__ = ["Semantics"]


class Semantics(StrEnum):
    """A RocketMQ Java client generation: ``V4`` = ``"4.x"``, ``V5`` = ``"5.x"`` (see the module docs)."""

    V4 = "4.x"
    V5 = "5.x"

    @classmethod
    def parse(cls, value: str) -> Semantics:
        """``value`` as a :class:`Semantics`: a member, ``"4.x"`` or ``"5.x"``.

        >>> Semantics.parse(Semantics.V5), Semantics.parse("4.x")
        (<Semantics.V5: '5.x'>, <Semantics.V4: '4.x'>)
        """
        if isinstance(value, str) and value in _VALUES:
            return cls(value)
        raise InvalidInputError(f"semantics must be '4.x' or '5.x', got {value!r}", value)


_VALUES = frozenset(s.value for s in Semantics)
