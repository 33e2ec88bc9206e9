"""The fast path (``jvm_decode = true``, the default): plain records decoded in Spark's JVM.

``plain.py`` is the JVM decoder (``jvm/``, compiled into the loader's jar at provisioning) as
a Spark column; ``onepass.py`` writes and publishes a batch of plain records in one Spark job
and is what the job plugs into the sink (``loader.commit.sink.FastPath``). The loader imports
this package only when ``jvm_decode`` is on; without it every record goes to the strict Python
parser in two Spark jobs a batch, with the same rows, rejects and commits.
"""
