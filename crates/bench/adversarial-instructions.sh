#!/usr/bin/env bash
# The adversarial suite's ratio for one reader and case, counted in instructions instead of time: a
# figure this shared machine cannot move (its times move by 50 % between runs, which hides whether a
# row is under 3x). Each cell runs under cachegrind twice, with N and 2N calls; the difference over
# N is one call's user-space instructions, setup left out. Prints instructions per KB for the case,
# for the read-through baseline (delivered in pieces for a chunked case), and their ratio.
#
#   apt-get install -y valgrind
#   cargo build --release -p sluice-bench
#   crates/bench/adversarial-instructions.sh xpath-cbr namespaces 10240 [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
reader=${1:?reader, e.g. xpath-cbr}
case=${2:?case, e.g. namespaces}
size=${3:-10240}
n=${4:-200}
bench=${BENCH:-target/release/sluice-bench}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Instructions of one run of the cell with $2 calls; its JSON figure is left in $out/$1.json.
count() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/$1.cg" \
        "$bench" adversarial --cell "$reader_now,$case_now,$size" --calls "$2" \
        >"$out/$1.json" 2>"$out/$1.err"
    grep "I *refs" "$out/$1.err" | tr -d ',' | grep -o '[0-9]*$'
}

# Instructions per KB of the current cell.
per_kb() {
    local one two bytes
    one=$(count "$1-1" "$n")
    two=$(count "$1-2" "$((2 * n))")
    bytes=$(grep -o '"bytes":[0-9]*' "$out/$1-1.json" | grep -o '[0-9]*$')
    echo "$one $two $bytes" | awk -v n="$n" '{ printf "%.0f", ($2 - $1) / n / ($3 / 1024) }'
}

reader_now=$reader case_now=$case
hostile=$(per_kb case)
outcome=$(grep -o '"outcome":"[^"]*"' "$out/case-1.json" | cut -d'"' -f4)
# A case delivered in pieces is held to the read-through input delivered in pieces.
yardstick=read-through
[[ $case == chunked* ]] && yardstick=chunked-read-through
reader_now=$reader case_now=$yardstick
baseline=$(per_kb baseline)
echo "$reader $case $size ($outcome): $hostile instructions per KB; $yardstick $baseline; ratio $(awk -v a="$hostile" -v b="$baseline" 'BEGIN { printf "%.2f", a / b }')"
