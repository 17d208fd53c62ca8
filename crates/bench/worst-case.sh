#!/usr/bin/env bash
# DirectProxy's latency while worst-case messages are being mediated (issue 30): a client sends, one
# after the other for the whole run, a CBRProxy message whose element carries 1,000,000 attributes
# (12 MB) and an XSLTProxy message of 20 MB; meanwhile `sluice-bench load` measures DirectProxy with
# 10 users at 1 KiB. Prints the load report (p50/p99/max) and how many heavy messages were answered
# with which status.
#
#   cargo build --release -p sluice -p sluice-bench -p sluice-echo
#   crates/bench/worst-case.sh [seconds]
#
# SLUICE=path picks another binary (the same run against an older commit shows what it did before).
# Without heavy messages (HEAVY=0) it gives the baseline latency to compare with.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
rel=target/release
sluice=${SLUICE:-$rel/sluice}
capp=${CAPP:-../shared/reference/wso2-perf/performance-ei/capp}
out=$(mktemp -d)
pids=()
# Older Sluices could not stop while a worker was stuck in a quadratic parse: KILL after TERM.
trap 'kill "${pids[@]}" 2>/dev/null || true; sleep 2; kill -9 "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT

echo_port=$((20000 + RANDOM % 10000))
port=$((echo_port + 1))
"$rel/sluice-echo" --listen "127.0.0.1:$echo_port" >/dev/null 2>&1 &
pids+=($!)
"$sluice" run "$capp" --host 127.0.0.1 --port "$port" \
    --endpoint "RealService=http://127.0.0.1:$echo_port/services/EchoService" \
    >"$out/stdout" 2>"$out/stderr" &
pids+=($!)
for _ in $(seq 300); do
    grep -q listening "$out/stdout" 2>/dev/null && break
    sleep 0.1
done
grep -q listening "$out/stdout" || { echo "sluice did not start: $(cat "$out/stderr")" >&2; exit 1; }

python3 - "$out" <<'EOF'
import sys
out = sys.argv[1]
env = '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
with open(f"{out}/attrs.xml", "w") as f:
    f.write(env + '<m:buyStocks xmlns:m="http://services.samples/xsd"')
    f.write("".join(f' a{i}="1"' for i in range(1_000_000)))
    f.write('><order><symbol>IBM</symbol></order></m:buyStocks></soapenv:Body></soapenv:Envelope>')
order = "<order><price>1.0</price><volume>10</volume><symbol>IBM</symbol></order>"
with open(f"{out}/big.xml", "w") as f:
    f.write(env + "<buyStocks>" + order * (20_000_000 // len(order)) + "</buyStocks></soapenv:Body></soapenv:Envelope>")
EOF

if [ "${HEAVY:-1}" = 1 ]; then
    # The heavy client: each message in turn until the run ends; every status is recorded.
    (
        end=$((SECONDS + seconds))
        while [ "$SECONDS" -lt "$end" ]; do
            for m in "CBRProxy attrs.xml" "XSLTProxy big.xml"; do
                set -- $m
                curl -s -o /dev/null -w "$1 %{http_code} %{time_total}\n" --max-time 120 \
                    -H 'Content-Type: text/xml' -H 'SOAPAction: urn:buyStocks' \
                    --data-binary "@$out/$2" "http://127.0.0.1:$port/services/$1" >>"$out/heavy" || true
            done
        done
    ) &
    pids+=($!)
fi
"$rel/sluice-bench" load "http://127.0.0.1:$port/services/DirectProxy" --size 1024 \
    -c 10 -d "$seconds" --warmup 1
if [ -s "$out/heavy" ]; then
    echo "heavy messages (proxy, status, seconds): count by proxy and status"
    awk '{n[$1" "$2]++; t[$1" "$2]+=$3} END {for (k in n) printf "  %s: %d, mean %.2f s\n", k, n[k], t[k]/n[k]}' "$out/heavy"
fi
