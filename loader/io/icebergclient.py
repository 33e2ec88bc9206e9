"""The pyiceberg REST catalog as the loader's driver uses it, and pyiceberg's private names.

pyiceberg (0.12) gives its REST session no timeout and has no setting for one, so a catalog
that accepts a request and never answers would hold the loader for ever. ``TimedRestCatalog``
is its REST catalog with every request bounded by the loader's ``[catalog] connect_timeout``
and ``read_timeout``; the S3 file system that reads table metadata gets the same bounds.

Every use of a pyiceberg name that is not public API sits in this module, so an upgrade that
moves one fails here, in ``tests/loader/io/test_icebergclient.py``, without a stack.
"""

from __future__ import annotations

from typing import Any

from icefloe.loader import keys
from icefloe.loader.config import CatalogConfig

__all__ = ["commit_transaction_once", "rest_catalog", "storage_properties"]


def _catalog_class() -> type:
    from pyiceberg.catalog.rest import RestCatalog
    from requests.adapters import HTTPAdapter

    class _TimeoutAdapter(HTTPAdapter):
        def __init__(self, timeout: tuple[float, float]) -> None:
            super().__init__()
            self._timeout = timeout

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = self._timeout
            return super().send(request, *args, **kwargs)

    class TimedRestCatalog(RestCatalog):
        """pyiceberg's REST catalog whose every request has a connect and a read timeout."""

        timeout: tuple[float, float] = (5.0, 30.0)

        def _create_session(self) -> Any:  # private: pyiceberg builds its session here
            session = super()._create_session()
            adapter = _TimeoutAdapter(self.timeout)
            for prefix in ("http://", "https://"):
                # Only requests' own adapter is replaced; one pyiceberg mounted (SigV4) stays.
                if type(session.get_adapter(prefix + "catalog")) is HTTPAdapter:
                    session.mount(prefix, adapter)
            return session

    return TimedRestCatalog


def storage_properties(cat: CatalogConfig) -> dict[str, str]:
    """pyiceberg's S3 file system properties for ``cat``: endpoint, keys, region, timeouts.

    Returns:
        ``s3.*`` -> value.  CONTAINS SECRETS: never log it.
    """
    props: dict[str, str] = {"s3.region": cat.s3_region}
    if cat.s3_endpoint:
        props["s3.endpoint"] = cat.s3_endpoint
    if cat.s3_access_key:
        props["s3.access-key-id"] = cat.s3_access_key
    if cat.s3_secret_key is not None:
        props["s3.secret-access-key"] = cat.s3_secret_key.reveal()
    props[keys.PYICEBERG_S3_CONNECT_TIMEOUT] = str(cat.connect_timeout)
    props[keys.PYICEBERG_S3_REQUEST_TIMEOUT] = str(cat.read_timeout)
    return props


def rest_catalog(name: str, cat: CatalogConfig) -> Any:
    """A pyiceberg REST catalog for ``cat`` with its timeouts.

    Args:
        name: the catalog's name (the table's first part).
        cat: the ``[catalog]`` settings (``type`` rest).

    Returns:
        The catalog; its ``load_table`` reads metadata from S3 with the same bounds.
    """
    props: dict[str, str] = {"uri": str(cat.uri), **storage_properties(cat)}
    if cat.warehouse:
        props["warehouse"] = cat.warehouse
    cls = _catalog_class()
    # A class per catalog: the timeout must be in place before __init__ fetches the config.
    timed = type(cls.__name__, (cls,), {"timeout": (cat.connect_timeout, cat.read_timeout)})
    return timed(name, **props)


def commit_transaction_once(catalog: Any, table: Any, tx: Any) -> Any:
    """Commit ``tx`` as built, once: its requirements and updates, with no retry.

    ``Transaction.commit_transaction`` would retry a refused commit on top of the table as it
    is now (pyiceberg 0.12), that is on top of a rival's take-over, and overwrite its live
    lease without reading it.
    """
    return catalog.commit_table(table, tx._requirements, tx._updates)
