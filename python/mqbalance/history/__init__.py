"""A RocketMQ or Kafka cluster watched over time: the history dataset, the collectors that write
it and the analysis that reads it.

* :mod:`~mqbalance.history.schema` — the dataset's layout and Arrow schemas (versioned);
* :mod:`~mqbalance.history.writer`, :mod:`~mqbalance.history.ticking` (the loop both watchers
  share), :mod:`~mqbalance.history.collector` (RocketMQ), :mod:`~mqbalance.history.kafka_collector`
  (Kafka), :mod:`~mqbalance.history.metrics` — the dataset written by ``mqbalance watch``;
* :mod:`~mqbalance.history.analysis` — per group: episodes, flapping, duplicated ids, queue health;
* :mod:`~mqbalance.history.job` — the analysis on Spark, a span at a time;
  :mod:`~mqbalance.history.spans` — the spans' rows put together into one result;
  :mod:`~mqbalance.history.report` — its Parquet, CSV, Markdown and HTML (a template) outputs and plots.
"""
