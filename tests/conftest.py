"""Fixtures shared by test modules."""

from spark_cluster import spark_cluster  # noqa: F401  (a module-scoped Spark standalone cluster)
