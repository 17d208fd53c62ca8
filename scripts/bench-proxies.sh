#!/usr/bin/env bash
# Side-by-side proxy benchmark on this machine: the echo back-end direct, Sluice (WSO2 perf artifacts,
# unchanged), nginx and HAProxy as pass-through peers, all in front of the same echo back-end.
# Reports throughput (wrk), latency, and CPU microseconds per request and peak RSS of the proxy process(es).
#
#   scripts/bench-proxies.sh [DURATION_S] [SIZES] [SCENARIOS]
#   e.g. scripts/bench-proxies.sh 30 "1024 10240 102400" "DirectProxy CBRProxy XSLTProxy"
# Needs: wrk, nginx, haproxy (apt-get install -y wrk nginx haproxy), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-30}
SIZES=${2:-"1024 10240"}
SCENARIOS=${3:-"DirectProxy CBRProxy CBRSOAPHeaderProxy CBRTransportHeaderProxy XSLTProxy XSLTEnhancedProxy"}
CONNS=${CONNS:-100}
WARMUP=${WARMUP:-5}
REF=../shared/reference/wso2-perf
for t in wrk nginx haproxy python3; do command -v $t >/dev/null || { echo "missing $t (apt-get install -y wrk nginx haproxy)"; exit 1; }; done
cargo build --release -q -p sluice
BIN=target/release/sluice
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; [ -f $W/nginx.pid ] && kill $(cat $W/nginx.pid) 2>/dev/null; rm -rf $W' EXIT

# Payloads: the WSO2 files for 1 KiB / 10 KiB, generated orders of the same shape for other sizes.
payload() {
  local size=$1 out=$W/payload-$1.xml
  case $size in
    1024) cp $REF/performance-ei/requests/2019-04_to_2020-08/1024B_buyStocks.xml $out ;;
    10240) cp $REF/performance-ei/requests/2019-04_to_2020-08/10240B_buyStocks.xml $out ;;
    *) python3 - "$size" "$out" <<'PY'
import sys
size, out = int(sys.argv[1]), sys.argv[2]
head = '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">\n<soapenv:Header><routing xmlns="http://someuri">xadmin;server1;community#1.0##</routing></soapenv:Header>\n<soapenv:Body><m:buyStocks xmlns:m="http://services.samples/xsd">\n'
tail = '</m:buyStocks></soapenv:Body></soapenv:Envelope>\n'
order = '<order><symbol>IBM</symbol><buyerID>asankha</buyerID><price>140.34</price><volume>2000</volume></order>\n'
n = max(1, (size - len(head) - len(tail)) // len(order))
open(out, 'w').write(head + order * n + tail)
PY
    ;;
  esac
  echo $out
}

wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened"; exit 1; }

SLUICE_LOG=warn $BIN run examples/bench/echo.xml --host 127.0.0.1 --port 9100 >/dev/null 2>&1 &
ECHO_PID=$!
SLUICE_LOG=warn $BIN run $REF/performance-ei/capp --host 127.0.0.1 --port 9200 \
  --endpoint RealService=http://127.0.0.1:9100/services/EchoService >/dev/null 2>&1 &
SLUICE_PID=$!
cat > $W/nginx.conf <<NGX
worker_processes auto;
daemon off;
pid $W/nginx.pid;
error_log $W/nginx-error.log warn;
events { worker_connections 10000; }
http {
  access_log off;
  client_body_temp_path $W/nginx-body;
  proxy_temp_path $W/nginx-proxy;
  upstream echo { server 127.0.0.1:9100; keepalive 512; }
  server {
    listen 127.0.0.1:9300;
    location / {
      proxy_pass http://echo/services/EchoService;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_request_buffering off;
      proxy_buffering off;
    }
  }
}
NGX
nginx -c $W/nginx.conf >/dev/null 2>&1 &
cat > $W/haproxy.cfg <<HAP
global
  maxconn 8000
defaults
  mode http
  timeout connect 10s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend fe
  bind 127.0.0.1:9400
  default_backend be
backend be
  http-reuse always
  http-request set-path /services/EchoService
  server echo 127.0.0.1:9100
HAP
haproxy -f $W/haproxy.cfg >/dev/null 2>&1 &
HAPROXY_PID=$!
for p in 9100 9200 9300 9400; do wait_port $p; done
NGINX_PIDS() { pgrep -f "nginx: worker" | tr '\n' ' '; pgrep -f "nginx: master" | tr '\n' ' '; }

cat > $W/post.lua <<'LUA'
wrk.method = "POST"
local f = io.open(os.getenv("PAYLOAD"), "rb"); wrk.body = f:read("*a"); f:close()
wrk.headers["Content-Type"] = "text/xml; charset=UTF-8"
wrk.headers["SOAPAction"] = "urn:buyStocks"
wrk.headers["routing"] = "xadmin;server1;community#1.0##"
response = function(status, headers, body) if status ~= 200 then wrk.thread:set("errors", (wrk.thread:get("errors") or 0) + 1) end end
done = function(summary, latency, requests) end
LUA

ticks() { local t=0; for p in "$@"; do for task in /proc/$p/task/*; do local s; s=$(cat $task/stat 2>/dev/null) || continue; s=${s##*) }; set -- $s; t=$((t + ${12} + ${13})); done; done; echo $t; }
hwm_kb() { local m=0; for p in "$@"; do local v; v=$(awk '/VmHWM/{print $2}' /proc/$p/status 2>/dev/null || echo 0); m=$((m + v)); done; echo $m; }
HZ=$(getconf CLK_TCK)

# One measurement: name url size pids...
measure() {
  local name=$1 url=$2 size=$3; shift 3
  export PAYLOAD=$(payload $size)
  wrk -t2 -c$CONNS -d${WARMUP}s -s $W/post.lua $url >/dev/null 2>&1 || true
  local t0; t0=$(ticks "$@")
  local out; out=$(wrk -t2 -c$CONNS -d${DUR}s --latency -s $W/post.lua $url 2>&1)
  local t1; t1=$(ticks "$@")
  local reqs rps avg p99 non2xx
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/{printf "%.0f", $2}')
  avg=$(echo "$out" | awk '/^    Latency/{print $2}')
  p99=$(echo "$out" | awk '/^ +99%/{print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}'); non2xx=${non2xx:-0}
  local cpu="-" rss="-"
  if [ $# -gt 0 ]; then cpu=$(( (t1 - t0) * 1000000 / HZ / (reqs > 0 ? reqs : 1) )); rss=$(( $(hwm_kb "$@") / 1024 )); fi
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n" "$name" "$size" "$rps" "$avg" "$p99" "$non2xx" "$cpu" "$rss"
}

echo "# $(date -u +%F) on $(nproc) cores: wrk -t2 -c$CONNS -d${DUR}s after ${WARMUP}s warm-up"
echo
echo "| Target | Message bytes | Requests/s | Avg latency | p99 | Non-2xx | Proxy CPU µs/request | Proxy peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
for size in $SIZES; do
  measure "Echo back-end direct" http://127.0.0.1:9100/services/EchoService $size
  measure "HAProxy 2.6 (pass-through)" http://127.0.0.1:9400/ $size $HAPROXY_PID
  measure "nginx 1.22 (pass-through)" http://127.0.0.1:9300/ $size $(NGINX_PIDS)
  for sc in $SCENARIOS; do
    measure "Sluice $sc" http://127.0.0.1:9200/services/$sc $size $SLUICE_PID
  done
done
