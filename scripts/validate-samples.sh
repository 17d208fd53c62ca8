#!/usr/bin/env bash
# How many of the Apache Synapse samples Sluice loads clean: `sluice validate` on each
# synapse_sample_*.xml and on the sample-600 folder of conformance/third_party/synapse-samples/ (copied from
# apache/synapse, see its README), counting those with no error and nothing unsupported (exit 0).
# crates/sluice/tests/validate.rs holds the count as a floor.
#
#   cargo build -p sluice
#   scripts/validate-samples.sh [-v]
#
# Prints one line per sample that does not load clean (its first error or unsupported finding that
# is not only a consequence of another) with -v, then the count. SLUICE=path picks another binary (before/after a change); SAMPLES=dir another
# copy of the samples.
set -euo pipefail
cd "$(dirname "$0")/.."
sluice=${SLUICE:-${CARGO_TARGET_DIR:-target}/debug/sluice}
samples=${SAMPLES:-conformance/third_party/synapse-samples}
verbose=${1:-}
[ -x "$sluice" ] || { echo "no $sluice: cargo build -p sluice first (or set SLUICE)" >&2; exit 2; }
[ -d "$samples/samples" ] || { echo "no samples at $samples (set SAMPLES)" >&2; exit 2; }

clean=0
total=0
for f in "$samples"/samples/synapse_sample_*.xml "$samples/sample-600"; do
    total=$((total + 1))
    # SYNAPSE_HOME: the samples read repository/conf/sample/resources/ through their <registry>.
    if out=$("$sluice" validate "$f" --home "$samples/home" 2>&1); then
        clean=$((clean + 1))
    elif [ "$verbose" = -v ]; then
        # The first finding that is not only a consequence of another ("depends on ...").
        first=$(grep -E ': (error|unsupported): ' <<<"$out" | grep -v -m1 ': depends on ' || true)
        # Only consequences: the note on what they depend on (a library template's mediator).
        [ -n "$first" ] || first=$(grep -m1 -E ': note: ' <<<"$out" || true)
        echo "$(basename "$f" .xml): ${first#*: }"
    fi
done
echo "$clean of $total Synapse samples load with no error and nothing unsupported"
