"""What the loader says to the world beside Spark, and how it rides out failures.

``deadletter.py`` (the dead-letter producer, each letter sent once), ``topics.py`` (Kafka's
partitions and watermarks), ``icebergclient.py`` (pyiceberg's REST catalog with timeouts),
``retry.py`` (which failures are the network's, back-off, ``progress_timeout``),
``metrics.py`` (the Prometheus endpoint).
"""
