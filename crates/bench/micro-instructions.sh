#!/usr/bin/env bash
# Instructions per call of `sluice-bench micro`'s cases, counted by valgrind's cachegrind: the
# evaluator alone, without the server, steadier than its timings and than instructions.sh.
#
#   apt-get install -y valgrind
#   cargo build --release -p sluice-bench
#   crates/bench/micro-instructions.sh 'CBRProxy //' 10240 [calls]
#
# Runs the case (the name given to --only) `calls` times (default 2000) and 0 times under cachegrind
# and prints (instructions - those of the run with no calls) / calls. The cachegrind output is left
# in $OUT (default target/instructions) for cg_annotate.
set -euo pipefail
cd "$(dirname "$0")/../.."
case=${1:?case, e.g. "CBRProxy //"}
size=${2:-10240}
calls=${3:-2000}
out=${OUT:-target/instructions}
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
count() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/micro-$1.cg" \
        target/release/sluice-bench micro --sizes "$size" --only "$case" --calls "$1" 2>&1 >/dev/null |
        grep "I *refs" | tr -d ',' | grep -o '[0-9]*$'
}
base=$(count 0)
total=$(count "$calls")
echo "$case $size B: $(( (total - base) / calls )) instructions per call (cachegrind: $out/micro-$calls.cg)"
