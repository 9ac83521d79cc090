"""A RocketMQ cluster watched over time: the history dataset, the collector that writes it and the
analysis that reads it.

* :mod:`~mqbalance.history.schema` — the dataset's layout and Arrow schemas (versioned).
"""
