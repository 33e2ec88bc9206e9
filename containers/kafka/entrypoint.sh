#!/bin/bash
# Kafka in a container. server.properties is written from the KAFKA_* environment variables with
# the convention of Kafka's own image (prefix dropped, "___" -> "-", "__" -> "_", "_" -> ".",
# lower case); KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS are JVM options. The log directory
# is formatted on first start, then the broker runs in the foreground.
set -euo pipefail
conf=/etc/kafka/server.properties
: >"$conf"
for name in $(compgen -e); do
  case "$name" in
    KAFKA_HEAP_OPTS | KAFKA_JVM_PERFORMANCE_OPTS | KAFKA_OPTS | KAFKA_LOG4J_OPTS) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${name#KAFKA_}
  key=${key,,}
  key=${key//___/-}
  key=${key//__/@}
  key=${key//_/.}
  key=${key//@/_}
  printf '%s=%s\n' "$key" "${!name}" >>"$conf"
done
java_opts=(${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m} ${KAFKA_JVM_PERFORMANCE_OPTS:-})
java_opts+=(-Dlog4j2.configurationFile=/etc/kafka/log4j2.properties -Djava.awt.headless=true)
classpath='/opt/kafka/lib/*'
log_dir=$(sed -n 's/^log\.dirs=//p' "$conf")
if [ ! -f "${log_dir:?KAFKA_LOG_DIRS is not set}/meta.properties" ]; then
  cluster_id=${CLUSTER_ID:-$(java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool random-uuid | tail -n 1)}
  java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool format --standalone \
    -t "$cluster_id" -c "$conf"
fi
exec java "${java_opts[@]}" -cp "$classpath" kafka.Kafka "$conf"
