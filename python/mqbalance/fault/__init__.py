"""The producer's queue selection and broker fault isolation (``MQFaultStrategy``,
``LatencyFaultTolerance``, ``pickOneAtLeast``), 4.x and 5.x, in :mod:`.strategy`; the two-broker
latency experiment behind ``mqbalance fault-latency-demo`` in :mod:`.demo`.

>>> from mqbalance.fault import ManualClock, MQFaultStrategy
>>> clock = ManualClock(0)
>>> f = MQFaultStrategy(semantics="4.x", send_latency_fault_enable=True, clock=clock)
>>> f.update_fault_item("broker-a", 3000, False)  # a 3 s send: isolated for a while
>>> f.is_available("broker-a"), f.is_available("broker-b")
(False, True)
"""

from mqbalance.fault.strategy import *  # noqa: F403 - the public names, listed in strategy.__all__
from mqbalance.fault.strategy import __all__ as __all__
