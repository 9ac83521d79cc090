"""The radix sort that orders a Spark partition's queue rows by their packed (group, topic, broker,
queue) key (``_core.key_order``) against numpy's stable argsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mqbalance import _core

# small keys (many equal ones, few passes), keys near 2^63 (every pass), their mixes, and keys
# whose low 11-bit digit is one for all (a pass with one digit, skipped)
_keys = st.lists(st.integers(0, 40) | st.integers(0, 2**63 - 1), max_size=300) | st.lists(
    st.integers(0, 2**30).map(lambda x: x << 11 | 5), max_size=300
)


@given(_keys)
@settings(max_examples=300, deadline=None)
def test_key_order_is_numpys_stable_argsort(keys) -> None:
    k = np.array(keys, dtype=np.int64)
    expected = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(_core.key_order(k.astype(np.uint64)), expected)
