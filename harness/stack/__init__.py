"""The local stack: Kafka, MinIO, the Iceberg REST catalog and Trino as local processes.

One module per service (`kafka`, `minio`, `catalog`, `trino`) on a common `service` base,
`process` and `readiness` for running and waiting, `config` and `keys` for what they are told,
`credentials` for the object store's generated keys, `lakehouse` for the four as one unit,
`tables` and `sql` for talking to Trino. `toxiproxy` is an optional fifth service: TCP proxies
that put faults on the loader's wire to Kafka, MinIO and the catalog.
"""
