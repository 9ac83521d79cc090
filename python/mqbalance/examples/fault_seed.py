"""Former name of :mod:`mqbalance.examples.fault_latency_demo` (the two-broker latency
experiment), kept so ``python -m mqbalance.examples.fault_seed`` and its imports keep working.

>>> run("seed", fail=False) == SEED_SUCCESS == RECORDED_SUCCESS
True
"""

from __future__ import annotations

import sys

from .fault_latency_demo import (
    EXPLANATION,
    LATENCY,
    RECORDED_FAILURE,
    RECORDED_SUCCESS,
    VARIANT_ALIASES,
    VARIANTS,
    main,
    run,
)

__all__ = [
    "EXPLANATION",
    "LATENCY",
    "VARIANTS",
    "VARIANT_ALIASES",
    "RECORDED_SUCCESS",
    "RECORDED_FAILURE",
    "run",
    "main",
]
__all__ += ["SEED_SUCCESS", "SEED_FAILURE"]

#: Former names of :data:`RECORDED_SUCCESS` / :data:`RECORDED_FAILURE`.
SEED_SUCCESS = RECORDED_SUCCESS
SEED_FAILURE = RECORDED_FAILURE

if __name__ == "__main__":
    sys.exit(main())
