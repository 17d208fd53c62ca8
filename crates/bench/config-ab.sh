#!/usr/bin/env bash
# Throughput of one WSO2 scenario with and without a --config file, in turns: for settings whose cost
# is to be seen (metrics on and off, say). Each run starts Sluice afresh on the WSO2 capp folder.
#
#   cargo build --release -p sluice -p sluice-bench -p sluice-echo
#   printf '[metric_handler]\nenable = false\n' > /tmp/off.toml
#   crates/bench/config-ab.sh DirectProxy /tmp/off.toml [rounds] [seconds] [users]
#
# Prints "round N with|without REQ/S" per run. One worker, the load generator beside it; on a
# shared machine runs move by 10 % and more, so read a small difference in instructions instead
# (instructions.sh with SLUICE_ARGS="--config FILE").
set -euo pipefail
cd "$(dirname "$0")/../.."
scenario=${1:?scenario, e.g. DirectProxy}
config=${2:?a --config file}
rounds=${3:-3}
seconds=${4:-10}
users=${5:-50}
rel=target/release
capp=${CAPP:-../shared/reference/wso2-perf/performance-ei/capp}
echo_port=$((20000 + RANDOM % 10000))
port=$((echo_port + 1))
out=$(mktemp -d)
"$rel/sluice-echo" --listen "127.0.0.1:$echo_port" >/dev/null 2>&1 &
echo_pid=$!
trap 'kill $echo_pid 2>/dev/null || true; rm -rf "$out"' EXIT
for round in $(seq "$rounds"); do
    for mode in with without; do
        args=()
        [ "$mode" = with ] && args=(--config "$config")
        "$rel/sluice" run "$capp" --host 127.0.0.1 --port "$port" --internal-port 0 --workers 1 \
            --endpoint "RealService=http://127.0.0.1:$echo_port/services/EchoService" "${args[@]}" \
            >"$out/stdout" 2>/dev/null &
        pid=$!
        for _ in $(seq 100); do
            grep -q listening "$out/stdout" 2>/dev/null && break
            sleep 0.1
        done
        rate=$("$rel/sluice-bench" load "http://127.0.0.1:$port/services/$scenario" --size 1024 \
            -c "$users" -d "$seconds" --warmup 2 2>&1 | grep -oE '[0-9]+ req/s' | head -1)
        echo "round $round $mode $rate"
        kill -TERM "$pid"
        wait "$pid" || true
    done
done
