#!/usr/bin/env bash
# How many of WSO2 Micro Integrator's own integration-test proxies and APIs Sluice deploys: `sluice
# validate` on every synapse-configs/default folder under integration/ of a micro-integrator
# checkout (github.com/wso2/micro-integrator, Apache License 2.0; not in this repository), summing
# the proxies and APIs each run says would deploy against the proxy-services/ and api/ files there.
# MI runs these tests from its product pack, whose home holds samples/service-bus/resources (in the
# checkout: integration/samples); some local entries read files there (`file:samples/...`). Give each
# test server the same, once, before counting:
#   for d in $(find PATH/integration -type d -path '*/ESB/server'); do
#       [ -e "$d/samples" ] || ln -s "$(realpath PATH/integration/samples)" "$d/samples"; done
#
#   cargo build --release -p sluice
#   scripts/count-mi-artifacts.sh PATH-TO-MICRO-INTEGRATOR [-v]
#
# With -v, the findings that keep artifacts out, counted by kind (names and numbers folded). SLUICE=path
# picks another binary (before/after a change).
set -euo pipefail
cd "$(dirname "$0")/.."
mi=${1:?path to a wso2/micro-integrator checkout}
verbose=${2:-}
sluice=${SLUICE:-${CARGO_TARGET_DIR:-target}/release/sluice}
[ -x "$sluice" ] || { echo "no $sluice: cargo build --release -p sluice first (or set SLUICE)" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
artifacts=0
while IFS= read -r dir; do
    n=$({ find "$dir/proxy-services" "$dir/api" -maxdepth 1 -name '*.xml' 2>/dev/null || true; } | wc -l)
    artifacts=$((artifacts + n))
    "$sluice" validate "$dir" >>"$out" 2>&1 || true
done < <(find "$mi/integration" -type d -path '*/synapse-configs/default' | sort)
proxies=$(grep -oE '[0-9]+ proxy service\(s\) would deploy' "$out" | awk '{s += $1} END {print s + 0}')
apis=$(grep -oE '; [0-9]+ API\(s\)' "$out" | awk '{s += $2} END {print s + 0}')
if [ "$verbose" = -v ]; then
    grep -E ': (unsupported|error): ' "$out" | sed -E 's/^[^ ]+: (unsupported|error): //; s/ \(in [a-zA-Z]+ [^)]*\)$//' |
        sed -E "s/'[^']*'/'X'/g; s/[0-9]+/N/g" | sort | uniq -c | sort -rn
fi
echo "$((proxies + apis)) of $artifacts proxies and APIs deploy ($proxies proxies, $apis APIs)"
