#!/usr/bin/env bash
# Builds Sluice with profile-guided optimisation (PGO): an instrumented build serves a training load,
# then the release build is optimised with the profile it wrote (hot paths laid out together, cold
# ones moved out of the way). The result is target/pgo/release/sluice; `cargo build --release` and
# the tests are unchanged.
#
#   rustup component add llvm-tools
#   crates/bench/pgo.sh
#   target/release/sluice-bench matrix --sluice target/pgo/release/sluice ...
#
# The training load is the kit's own: the echo back-end and, for each deployed proxy of the WSO2
# capp folder below, 20 users for 2 s at each of three generated payload sizes (512 B, 4 KiB,
# 40 KiB: not the sizes the matrix measures, and not WSO2's payload files). Proxies that fault for
# the kit's message (no transport header to route on, for one) train the fault paths.
set -euo pipefail
cd "$(dirname "$0")/../.."
capp=${CAPP:-../shared/reference/wso2-perf/performance-ei/capp}
target=${PGO_TARGET:-target/pgo}
seconds=${PGO_SECONDS:-2}
rel=target/release

profdata=$(find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f 2>/dev/null | head -1)
if [ -z "$profdata" ]; then
    echo "llvm-profdata not found: rustup component add llvm-tools" >&2
    exit 1
fi
data=$(mktemp -d)
trap 'rm -rf "$data"; kill $(jobs -p) 2>/dev/null || true' EXIT

# The kit (plain builds), then Sluice instrumented.
cargo build --release -p sluice-bench -p sluice-echo
RUSTFLAGS="-Cprofile-generate=$data" cargo build --release -p sluice --target-dir "$target/instrumented"

echo_port=$((20000 + RANDOM % 10000))
port=$((echo_port + 1))
"$rel/sluice-echo" --listen "127.0.0.1:$echo_port" >/dev/null 2>&1 &
echo_pid=$!
"$target/instrumented/release/sluice" run "$capp" --host 127.0.0.1 --port "$port" \
    --endpoint "RealService=http://127.0.0.1:$echo_port/services/EchoService" >"$data/sluice.out" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q listening "$data/sluice.out" && break; sleep 0.1; done
grep -q listening "$data/sluice.out" || { cat "$data/sluice.out" >&2; exit 1; }
# The proxies this build deploys from the folder (the service listing's first line).
services=$(curl -s "http://127.0.0.1:$port/services/" | head -1 | sed 's/^Deployed services: //; s/;.*//' | tr -d ',')
for service in $services; do
    for size in 512 4096 40960; do
        "$rel/sluice-bench" load "http://127.0.0.1:$port/services/$service" --size "$size" \
            -c 20 -d "$seconds" --warmup 0 >/dev/null 2>&1 || true
    done
    echo "trained on $service"
done
# The profile is written when Sluice exits.
kill -TERM "$pid"
wait "$pid" || true
kill "$echo_pid"
"$profdata" merge -o "$data/sluice.profdata" "$data"/*.profraw
mkdir -p "$target"
cp "$data/sluice.profdata" "$target/sluice.profdata"
RUSTFLAGS="-Cprofile-use=$PWD/$target/sluice.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
    cargo build --release -p sluice --target-dir "$target"
echo "built $target/release/sluice (profile: $target/sluice.profdata)"
