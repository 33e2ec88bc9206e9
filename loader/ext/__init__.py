"""Opt-in extensions around the core, each imported only when the configuration asks for it.

* ``transforms.py``: unnest, projections and case conversion (``[transform]``);
* ``fastpath/``: plain records decoded in Spark's JVM, a batch in one Spark job
  (``jvm_decode``, on by default);
* ``firstslice.py``: a backlog's first rows committed in a small slice
  (``kafka.first_slice_records``, 5,000 by default);
* ``classdata.py``: a JVM class-data archive for a faster start (``[spark] class_data``).

They import the core (``loader.commit``) and the rings around it; nothing imports them at
module level, so a loader configured without them runs without their code.
"""
