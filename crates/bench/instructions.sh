#!/usr/bin/env bash
# Sluice's user-space instructions per request for one WSO2 scenario, counted by valgrind's cachegrind:
# a figure this noisy machine cannot move (the matrix's throughput and CPU time move by 20 % and more
# between runs). Kernel time is not in it, so compare scenarios or commits with it, not throughputs.
#
#   apt-get install -y valgrind
#   cargo build --release -p sluice -p sluice-bench -p sluice-echo
#   crates/bench/instructions.sh CBRProxy 1024 [seconds]
#   REQUESTS=20000 crates/bench/instructions.sh CBRProxy 1024
#
# It starts the echo back-end and Sluice under cachegrind on the WSO2 capp folder, sends 4 users' load
# for the given seconds (default 5) or, with REQUESTS=n, for exactly n requests (a count that does
# not depend on how fast the binary is: use it to compare commits), stops Sluice with SIGTERM, and prints (instructions - those of a
# start and stop with no requests) / requests. SLUICE=path picks another binary (A/B between commits);
# SLUICE_ARGS adds arguments (`--config FILE`); the cachegrind output is left in $OUT (default
# target/instructions) for cg_annotate.
set -euo pipefail
cd "$(dirname "$0")/../.."
scenario=${1:?scenario, e.g. CBRProxy}
size=${2:-1024}
seconds=${3:-5}
[ -n "${REQUESTS:-}" ] && seconds=${3:-600}
rel=target/release
sluice=${SLUICE:-$rel/sluice}
capp=${CAPP:-../shared/reference/wso2-perf/performance-ei/capp}
out=${OUT:-target/instructions}
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }

echo_port=$((20000 + RANDOM % 10000))
port=$((echo_port + 1))
"$rel/sluice-echo" --listen "127.0.0.1:$echo_port" >/dev/null 2>&1 &
echo_pid=$!
trap 'kill $echo_pid 2>/dev/null || true' EXIT

# One cachegrind run of Sluice; with seconds > 0, load in between. Prints "instructions requests".
measure() {
    local secs=$1 tag=$2 n=0
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/$tag.cg" \
        "$sluice" run "$capp" --host 127.0.0.1 --port "$port" \
        --endpoint "RealService=http://127.0.0.1:$echo_port/services/EchoService" ${SLUICE_ARGS:-} \
        >"$out/$tag.stdout" 2>"$out/$tag.stderr" &
    local pid=$!
    for _ in $(seq 600); do
        grep -q listening "$out/$tag.stdout" 2>/dev/null && break
        sleep 0.1
    done
    grep -q listening "$out/$tag.stdout" || { echo "sluice did not start: $out/$tag.stderr" >&2; exit 1; }
    if [ "$secs" != 0 ]; then
        local count=()
        [ -n "${REQUESTS:-}" ] && count=(--requests "$REQUESTS")
        "$rel/sluice-bench" load "http://127.0.0.1:$port/services/$scenario" --size "$size" \
            -c 4 -d "$secs" --warmup 0 "${count[@]}" >"$out/$tag.load" 2>&1
        n=$(grep -o '[0-9]* ok' "$out/$tag.load" | grep -o '[0-9]*')
    fi
    kill -TERM "$pid"
    wait "$pid" || true
    local ir
    ir=$(grep "I *refs" "$out/$tag.stderr" | tr -d ',' | grep -o '[0-9]*$')
    echo "$ir $n"
}

read -r base _ < <(measure 0 idle)
read -r total n < <(measure "$seconds" "$scenario-$size")
echo "$scenario $size B: $n requests, $(( (total - base) / n )) instructions per request (cachegrind: $out/$scenario-$size.cg)"
