"""The kinds of Iceberg catalog the loader commits through, one module each.

A kind gives the loader's two clients of the catalog what they need, from ``[catalog]``:

- ``spark_properties``: the Iceberg ``SparkCatalog`` properties (without the
  ``spark.sql.catalog.<name>.`` prefix and without secrets) with which Spark's writes stage
  their snapshots;
- ``client``: the pyiceberg catalog with which the driver reads the table and publishes each
  batch by a commit the catalog checks atomically (main still where the batch was planned);
- ``endpoint``: what a message names when the catalog does not answer.

The storage (S3FileIO's properties) is the same for every kind and is added by the caller. A
further kind is one module here with these three functions, and its name in
``loader.config.CATALOG_TYPES``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from icefloe.loader.config import CatalogConfig

__all__ = ["client", "endpoint", "kind", "spark_properties"]


def kind(cat: CatalogConfig) -> ModuleType:
    """The module of ``cat.type`` (``loader.catalogs.rest`` or ``loader.catalogs.glue``)."""
    if cat.type == "glue":
        from icefloe.loader.catalogs import glue

        return glue
    from icefloe.loader.catalogs import rest

    return rest


def spark_properties(cat: CatalogConfig) -> dict[str, str]:
    """The catalog's own ``SparkCatalog`` properties, unprefixed (no storage, no secret)."""
    props: dict[str, str] = kind(cat).spark_properties(cat)
    return props


def client(name: str, cat: CatalogConfig) -> Any:
    """The pyiceberg catalog ``name`` for ``cat``, every request bounded by its timeouts."""
    return kind(cat).client(name, cat)


def endpoint(cat: CatalogConfig) -> str:
    """The catalog's address as messages name it."""
    where: str = kind(cat).endpoint(cat)
    return where
