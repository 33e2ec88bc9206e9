"""Configuration and property keys of the stack's services, as named constants.

Service configuration files are generated from these names, so a key is spelled once here and
nowhere else. The loader keeps its own snapshot-summary keys in loader/keys.py.
"""

from __future__ import annotations

from icefloe.loader.config import DEFAULT_S3_REGION

# Environment variables the stack reads (provisioning's own are in harness/provision/).
ENV_RUN_DIR = "ICEFLOE_RUN_DIR"
ENV_CONFIG = "ICEFLOE_CONFIG"

# Kafka broker (server.properties).
KAFKA_PROCESS_ROLES = "process.roles"
KAFKA_NODE_ID = "node.id"
KAFKA_QUORUM_BOOTSTRAP = "controller.quorum.bootstrap.servers"
KAFKA_LISTENERS = "listeners"
KAFKA_ADVERTISED_LISTENERS = "advertised.listeners"
KAFKA_CONTROLLER_LISTENER_NAMES = "controller.listener.names"
KAFKA_LISTENER_PROTOCOL_MAP = "listener.security.protocol.map"
KAFKA_INTER_BROKER_LISTENER = "inter.broker.listener.name"
KAFKA_LOG_DIRS = "log.dirs"
KAFKA_OFFSETS_RF = "offsets.topic.replication.factor"
KAFKA_TXN_RF = "transaction.state.log.replication.factor"
KAFKA_TXN_MIN_ISR = "transaction.state.log.min.isr"
KAFKA_SHARE_RF = "share.coordinator.state.topic.replication.factor"
KAFKA_SHARE_MIN_ISR = "share.coordinator.state.topic.min.isr"
KAFKA_DEFAULT_PARTITIONS = "num.partitions"
KAFKA_GROUP_INITIAL_DELAY = "group.initial.rebalance.delay.ms"
KAFKA_AUTO_CREATE_TOPICS = "auto.create.topics.enable"

# MinIO (environment).
MINIO_ROOT_USER = "MINIO_ROOT_USER"
MINIO_ROOT_PASSWORD = "MINIO_ROOT_PASSWORD"
MINIO_UPDATE = "MINIO_UPDATE"

# Iceberg REST catalog server (environment: CATALOG_ prefix, "__" -> "-", "_" -> ".").
CATALOG_IMPL = "CATALOG_CATALOG__IMPL"
CATALOG_URI = "CATALOG_URI"
CATALOG_CLIENTS = "CATALOG_CLIENTS"  # JDBC connection pool size
CATALOG_JDBC_USER = "CATALOG_JDBC_USER"
CATALOG_JDBC_PASSWORD = "CATALOG_JDBC_PASSWORD"
CATALOG_WAREHOUSE = "CATALOG_WAREHOUSE"
CATALOG_IO_IMPL = "CATALOG_IO__IMPL"
CATALOG_S3_ENDPOINT = "CATALOG_S3_ENDPOINT"
CATALOG_S3_PATH_STYLE = "CATALOG_S3_PATH__STYLE__ACCESS"
CATALOG_S3_ACCESS_KEY = "CATALOG_S3_ACCESS__KEY__ID"
CATALOG_S3_SECRET_KEY = "CATALOG_S3_SECRET__ACCESS__KEY"
CATALOG_CLIENT_REGION = "CATALOG_CLIENT_REGION"
CATALOG_REST_HOST = "CATALOG_REST_HOST"
CATALOG_REST_PORT = "CATALOG_REST_PORT"

# Trino (config.properties, node.properties, catalog/lake.properties).
TRINO_COORDINATOR = "coordinator"
TRINO_INCLUDE_COORDINATOR = "node-scheduler.include-coordinator"
TRINO_HTTP_PORT = "http-server.http.port"
TRINO_DISCOVERY_URI = "discovery.uri"
TRINO_QUERY_MAX_MEMORY = "query.max-memory"
TRINO_QUERY_MAX_MEMORY_PER_NODE = "query.max-memory-per-node"
TRINO_NODE_ENVIRONMENT = "node.environment"
TRINO_NODE_ID = "node.id"
TRINO_NODE_DATA_DIR = "node.data-dir"
TRINO_NODE_BIND_IP = "node.bind-ip"
TRINO_NODE_INTERNAL_ADDRESS = "node.internal-address"
TRINO_CONNECTOR = "connector.name"
TRINO_ICEBERG_CATALOG_TYPE = "iceberg.catalog.type"
TRINO_ICEBERG_REST_URI = "iceberg.rest-catalog.uri"
TRINO_GLUE_ENDPOINT = "hive.metastore.glue.endpoint-url"
TRINO_GLUE_REGION = "hive.metastore.glue.region"
TRINO_GLUE_ACCESS_KEY = "hive.metastore.glue.aws-access-key"
TRINO_GLUE_SECRET_KEY = "hive.metastore.glue.aws-secret-key"
TRINO_GLUE_WAREHOUSE = "hive.metastore.glue.default-warehouse-dir"
TRINO_ICEBERG_FILE_FORMAT = "iceberg.file-format"
TRINO_FS_NATIVE_S3 = "fs.native-s3.enabled"
TRINO_S3_ENDPOINT = "s3.endpoint"
TRINO_S3_PATH_STYLE = "s3.path-style-access"
TRINO_S3_REGION = "s3.region"
TRINO_S3_ACCESS_KEY = "s3.aws-access-key"
TRINO_S3_SECRET_KEY = "s3.aws-secret-key"
# Environment variables Trino's catalog file reads its S3 credentials from (${ENV:...}).
TRINO_ENV_S3_ACCESS_KEY = "ICEFLOE_S3_ACCESS_KEY"
TRINO_ENV_S3_SECRET_KEY = "ICEFLOE_S3_SECRET_KEY"


def trino_env(variable: str) -> str:
    """Trino's syntax for a property value read from the server's environment."""
    return "${ENV:" + variable + "}"


# pyiceberg REST catalog properties.
PYICEBERG_URI = "uri"
PYICEBERG_S3_ENDPOINT = "s3.endpoint"
PYICEBERG_S3_ACCESS_KEY = "s3.access-key-id"
PYICEBERG_S3_SECRET_KEY = "s3.secret-access-key"
PYICEBERG_S3_REGION = "s3.region"

TRINO_CATALOG = "lake"
TRINO_GLUE_CATALOG = "glue"
"""Trino's catalog on the Glue-compatible service (``harness.stack.glue``), when it runs."""
TRINO_USER = "icefloe"
# A one-row table the harness scans to know Trino can schedule work on `lake`.
TRINO_READY_TABLE = "icefloe_harness.ready"
WAREHOUSE_BUCKET = "warehouse"
# The region every client of MinIO signs for: the loader's default, so a loader needs none set.
S3_REGION = DEFAULT_S3_REGION
