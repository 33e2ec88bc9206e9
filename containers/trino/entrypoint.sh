#!/bin/bash
# Trino in a container, run with java directly as the local-process stack runs it: the lines of
# jvm.config are the JVM's options and node.properties become system properties (what Trino's
# launcher does), then the server runs in the foreground.
set -euo pipefail
etc=/etc/trino
mapfile -t jvm < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$etc/jvm.config")
mapfile -t node < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$etc/node.properties")
data_dir=$(sed -n 's/^node\.data-dir=//p' "$etc/node.properties")
mkdir -p "${data_dir:-/data/trino}"
exec java "${jvm[@]}" "${node[@]/#/-D}" -Dconfig="$etc/config.properties" \
  -Dlog.levels-file="$etc/log.properties" -cp '/usr/lib/trino/lib/*' io.trino.server.TrinoServer
