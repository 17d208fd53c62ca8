#!/bin/sh
# Records conformance/SUITE/synapse-golden.json from Apache Synapse (see README.md).
exec python3 "$(dirname "$0")/record.py" "$@"
