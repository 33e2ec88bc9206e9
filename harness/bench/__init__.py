"""`icefloe bench`: the loader beside its ceiling and a hand-written baseline, in one run.

options.py    what a run measures and how big it is (the command line, parsed and checked)
stats.py      percentiles, rates and ratios: pure functions
report.py     the figures of a run as JSON, Markdown tables and a PNG chart
workload.py   reference rows, topics, tables, publishing and "visible in Trino"
ceiling.py    raw consume rate and parse-to-Parquet rate of the same messages
baseline.py   confluent-kafka + pyiceberg, appending every N seconds (not exactly-once)
loaders.py    the loader on a backlog: local mode and a two-worker standalone cluster
freshness.py  publish-to-visible percentiles and data files per hour at a steady rate
run.py        one run: every part in turn on one stack, then the report
"""
