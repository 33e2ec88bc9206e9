"""Spark and the job's life: start-up, the streaming query, the lease between batches, stop.

``job.py`` (the loader's query from take-over to a clean stop; it plugs the configured
extensions in), ``spark.py`` (the session), ``jvmbridge.py`` (pyspark's private names),
``sessionstart.py`` (the session started beside the take-over), ``leasekeeper.py`` (the lease
renewed while the loader starts), ``status.py`` (``load status``).
"""
