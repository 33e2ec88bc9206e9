"""`icefloe bench`: the loader beside two bounds, two baselines and a peer, in one run.

options.py    what a run measures and how big it is (the command line, parsed and checked)
stats.py      percentiles, rates and ratios: pure functions
figures.py    what a measurement gives: a run, a figure (the median of its runs), freshness
headline.py   every row visible from process start: the loader beside the sink at its best
              commit interval, medians only: pure functions
report.py     the figures of a run as JSON, Markdown tables and a PNG chart
workload.py   reference rows, topics, tables, publishing and "visible in Trino"
stages.py     raw consume (a bound) and parse to Parquet in Python (a baseline), of the messages
engine.py     the engine's own cost (a bound): Spark, the loader's JVM decoder, Iceberg append
baseline.py   confluent-kafka + pyiceberg, appending every N seconds (not exactly-once)
loaders.py    the loader on a backlog: local mode and a two-worker standalone cluster
peers.py      the Apache Iceberg Kafka Connect sink on the same backlog, at each commit interval
freshness.py  publish-to-visible percentiles and data files per hour at a steady rate
run.py        one run: every part in turn on one stack, then the report
"""
