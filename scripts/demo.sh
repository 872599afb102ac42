#!/usr/bin/env bash
# `make demo`: runs the most complete real thing Sluice has.
#
# The local-cluster demo (a GRPO job on the embedded cluster, issues 5-11) does not exist yet.
# Until it does, this runs the foundation demo: Sluice's real HTTP server, client, auth, wire
# format, metrics (checked by promtool) and graceful shutdown, end to end on loopback.
set -euo pipefail
build_dir=${1:-build}
echo "== Sluice demo =="
echo "The local-cluster training demo is not built yet; running the foundation demo instead."
echo "It exercises the shared core end to end (see demo/foundation_demo.cpp)."
echo
exec "$build_dir/bin/sluice-foundation-demo" --log-level=warn
