#!/usr/bin/env bash
# Where Sluice's CPU goes under load, per request and per worker thread, for one WSO2 scenario:
# throughput, Sluice's CPU µs per request (and the user-space part), voluntary and involuntary context
# switches per request, and each worker thread's CPU ticks over the window (an even split means the
# connections are spread over the workers).
#
#   cargo build --release -p sluice -p sluice-bench -p sluice-echo
#   crates/bench/cpu.sh CBRProxy 10240 [seconds] [rounds]
#
# Each round starts the echo back-end and Sluice afresh on the WSO2 capp folder, warms up for 1 s with
# 100 users, then measures `seconds` (default 4) of 100 users' load. SLUICE=path picks another binary;
# KIT_BATCH=1 runs the echo back-end and the load generator under SCHED_BATCH (chrt -b), so that
# their wake-ups do not preempt Sluice.
# PIN=1 pins each Sluice worker thread (sluice-N) to CPU N once Sluice is up, so that no worker moves
# between cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
scenario=${1:?scenario, e.g. CBRProxy}
size=${2:-1024}
seconds=${3:-4}
rounds=${4:-1}
rel=target/release
sluice=${SLUICE:-$rel/sluice}
capp=${CAPP:-../shared/reference/wso2-perf/performance-ei/capp}
kit=()
[ "${KIT_BATCH:-0}" = 1 ] && kit=(chrt -b 0)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status | awk '/^voluntary/ {v += $2} /^nonvoluntary/ {n += $2} END {print v, n}'; }
threads() { for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done; }

for round in $(seq "$rounds"); do
    echo_port=$((20000 + RANDOM % 10000))
    port=$((echo_port + 1))
    "${kit[@]}" "$rel/sluice-echo" --listen "127.0.0.1:$echo_port" >/dev/null 2>&1 &
    echo_pid=$!
    "$sluice" run "$capp" --host 127.0.0.1 --port "$port" \
        --endpoint "RealService=http://127.0.0.1:$echo_port/services/EchoService" >"$out/sluice.out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -q listening "$out/sluice.out" && break; sleep 0.1; done
    if [ "${PIN:-0}" = 1 ]; then
        for t in /proc/"$pid"/task/*; do
            name=$(cat "$t/comm")
            case $name in sluice-[0-9]*) taskset -p -c "${name#sluice-}" "${t##*/}" >/dev/null ;; esac
        done
    fi
    url="http://127.0.0.1:$port/services/$scenario"
    "${kit[@]}" "$rel/sluice-bench" load "$url" --size "$size" -c 100 -d 1 --warmup 0 >/dev/null
    read -r u1 s1 < <(ticks "$pid")
    read -r v1 n1 < <(switches "$pid")
    threads "$pid" >"$out/t1"
    "${kit[@]}" "$rel/sluice-bench" load "$url" --size "$size" -c 100 -d "$seconds" --warmup 0 >"$out/load"
    read -r u2 s2 < <(ticks "$pid")
    read -r v2 n2 < <(switches "$pid")
    threads "$pid" >"$out/t2"
    kill "$pid" "$echo_pid"
    wait "$pid" "$echo_pid" 2>/dev/null || true
    ok=$(grep -o '[0-9]* ok' "$out/load" | grep -o '[0-9]*')
    hz=$(getconf CLK_TCK)
    per_thread=$(paste "$out/t1" "$out/t2" | awk '$1 ~ /^sluice-[0-9]+$/ {printf "%s %d  ", $1, $4 - $2}')
    awk -v sc="$scenario" -v size="$size" -v n="$ok" -v secs="$seconds" -v hz="$hz" \
        -v u="$((u2 - u1))" -v s="$((s2 - s1))" -v inv="$((n2 - n1))" -v vol="$((v2 - v1))" -v th="$per_thread" \
        'BEGIN { printf "%s %s: %d req/s, Sluice %.1f CPU us/request (user %.1f), switches/request %.3f voluntary %.3f involuntary; ticks per worker: %s\n",
                 sc, size, n / secs, (u + s) * 1e6 / hz / n, u * 1e6 / hz / n, vol / n, inv / n, th }'
done
