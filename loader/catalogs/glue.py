"""AWS Glue, or a Glue-compatible endpoint (``[catalog] type = "glue"``, ``glue_endpoint``).

Glue fences a commit by the table's ``VersionId``: pyiceberg's ``commit_table`` reads the table,
checks the commit's requirements (main still where the batch was planned) against what it read,
and updates the table only if its ``VersionId`` is still the one read, so a commit that raced
any other (a rival's publish, a lease renewal, a staged write) is refused, not applied. Spark's
``GlueCatalog`` commits the same way as long as no ``lock-impl`` is set (a lock manager turns
the ``VersionId`` check off), and the loader sets none.

Requests are signed with the AWS default credentials (environment, profile or role) in the
region ``s3_region``. The driver's client is built here with the loader's timeouts and no retry
of its own: botocore would send an ``UpdateTable`` whose answer was lost again, and the retry
of a commit that landed fails as a concurrent one. The loader reads the table back instead, as
it does on a REST catalog, and its own retries (``progress_timeout``) cover the rest.
"""

from __future__ import annotations

from typing import Any

from icefloe.loader.config import CatalogConfig
from icefloe.loader.io.icebergclient import storage_properties

GLUE_CATALOG_IMPL = "org.apache.iceberg.aws.glue.GlueCatalog"
"""Iceberg's Glue catalog in Java (in the Spark runtime; its AWS client in iceberg-aws-bundle)."""


def spark_properties(cat: CatalogConfig) -> dict[str, str]:
    """``catalog-impl`` Glue and its endpoint; the region and HTTP timeouts are the storage's."""
    props = {"catalog-impl": GLUE_CATALOG_IMPL}
    if cat.glue_endpoint:
        props["glue.endpoint"] = cat.glue_endpoint
    return props


def client(name: str, cat: CatalogConfig) -> Any:
    """pyiceberg's Glue catalog on a boto3 client with the loader's timeouts and no retries.

    CONTAINS SECRETS (the storage's keys, in its properties): never log it.
    """
    import boto3
    from botocore.config import Config
    from pyiceberg.catalog.glue import GlueCatalog

    glue = boto3.Session(region_name=cat.s3_region).client(
        "glue",
        endpoint_url=cat.glue_endpoint,
        config=Config(
            connect_timeout=cat.connect_timeout,
            read_timeout=cat.read_timeout,
            retries={"max_attempts": 0, "mode": "standard"},
        ),
    )
    props = storage_properties(cat)
    if cat.warehouse:
        props["warehouse"] = cat.warehouse
    return GlueCatalog(name, client=glue, **props)


def endpoint(cat: CatalogConfig) -> str:
    return cat.glue_endpoint or f"AWS Glue ({cat.s3_region})"
