"""RocketMQ fleets: the snapshot model, its readers, the live reader, the assignment engine and
the facts the shared audit rules (:mod:`mqbalance.fleet.findings`) read.

The modules, bottom to top (each imports only modules to its left; ``example`` stands alone)::

    checks  <  snapshot  <  from_json, from_arrow  <  files, live
    schemas, snapshot  <  assignment, churn, what_if  <  facts  <  audit  <  spark

* :mod:`~mqbalance.fleet.rocketmq.snapshot` — :class:`~mqbalance.fleet.rocketmq.snapshot.Snapshot`
  and its typed views; the JSON and Parquet layouts;
* :mod:`~mqbalance.fleet.rocketmq.checks` — field and column checks shared by the readers;
* :mod:`~mqbalance.fleet.rocketmq.from_json`, :mod:`~mqbalance.fleet.rocketmq.from_arrow` — a
  snapshot from parsed JSON, from Parquet tables; :mod:`~mqbalance.fleet.rocketmq.files` — load
  and write snapshot files;
* :mod:`~mqbalance.fleet.rocketmq.live` — a snapshot read from a running cluster;
  :mod:`~mqbalance.fleet.rocketmq.example` — generated example fleets with planted hazards;
* :mod:`~mqbalance.fleet.rocketmq.schemas`, :mod:`~mqbalance.fleet.rocketmq.assignment`,
  :mod:`~mqbalance.fleet.rocketmq.churn`, :mod:`~mqbalance.fleet.rocketmq.what_if`,
  :mod:`~mqbalance.fleet.rocketmq.facts` — the engine, Spark-free;
* :mod:`~mqbalance.fleet.rocketmq.audit` — rows and findings from the facts, in-process;
  :mod:`~mqbalance.fleet.rocketmq.spark` — the same at scale on Spark.
"""
