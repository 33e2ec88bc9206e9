"""An Iceberg REST catalog (``[catalog] type = "rest"``, the default) at ``[catalog] uri``.

The catalog checks a commit's requirements (``assert-ref-snapshot-id``) atomically with it.
Iceberg's Java client posts a metrics report after every commit unless told not to; the loader
turns that off (``keys.REST_METRICS_REPORTING``).
"""

from __future__ import annotations

from typing import Any

from icefloe.loader import keys
from icefloe.loader.config import CatalogConfig
from icefloe.loader.io.icebergclient import rest_catalog


def spark_properties(cat: CatalogConfig) -> dict[str, str]:
    """``type=rest`` at ``uri``, its client's timeouts, no metrics reports."""
    assert cat.uri is not None  # CatalogConfig requires it for this type
    return {
        "type": "rest",
        "uri": cat.uri,
        keys.REST_METRICS_REPORTING: "false",
        keys.REST_CONNECTION_TIMEOUT_MS: str(round(cat.connect_timeout * 1000)),
        keys.REST_SOCKET_TIMEOUT_MS: str(round(cat.read_timeout * 1000)),
    }


def client(name: str, cat: CatalogConfig) -> Any:
    """pyiceberg's REST catalog, every request bounded (``icebergclient.rest_catalog``)."""
    return rest_catalog(name, cat)


def endpoint(cat: CatalogConfig) -> str:
    return str(cat.uri)
