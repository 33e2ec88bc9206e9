"""Catalogs under test: the promises an Iceberg catalog makes to every loader, checked on it alone.

A loader's exactly-once rests on its catalog: a commit the catalog acknowledged must stay in the
table's lineage, two commits on one base must not both win, a writer behind the table must be
refused, and none of it may be undone by a kill -9 of the catalog. ``icefloe catalogs check``
runs each catalog kind (:mod:`harness.catalogs.kinds`) beside the stack, on its object store,
drives plain pyiceberg writers (and Glue's API directly, where pyiceberg would refuse for the
catalog) against it (:mod:`harness.catalogs.drive`), and judges what the catalog itself kept
(:mod:`harness.catalogs.verdicts`): no loader is involved, so a broken promise is the catalog's.
"""
