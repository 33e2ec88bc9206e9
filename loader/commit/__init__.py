"""The core: the whole exactly-once protocol, and nothing else.

Read in this order:

1. ``offsets.py``: what the table says was loaded (the offsets in each snapshot's summary)
   and the plan of a batch against it, as pure functions;
2. ``lease.py``: which one loader process may commit, as pure functions;
3. ``table.py``: the table read afresh for each batch, the take-over, the publish with the
   fence, and a lost commit answer read back from the table;
4. ``sink.py``: one micro-batch, planned from the table's committed offsets, its rows and
   dead letters routed, staged and published, retried safely;
5. ``hooks.py``: the points where a test may reach in (nothing happens unless one does).

Around it: decoding (``loader.decode``), Kafka, the catalog client and failures
(``loader.io``), Spark and the job's life (``loader.run``), the settings (``loader.config``);
opt-in extensions (``loader.ext``) and the test kit's hooks (``loader.testing``) import the
core, never the other way round.
"""
