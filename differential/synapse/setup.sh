#!/bin/sh
# Fetches Apache Synapse 3.0.1 and the jars it runs on from Maven Central into the cache
# (~/.cache/sluice-synapse/3.0.1, or $SLUICE_SYNAPSE_CACHE/3.0.1). A second run finds them there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${SLUICE_SYNAPSE_CACHE:-$HOME/.cache/sluice-synapse}
home=$cache/3.0.1
if [ -f "$home/ready" ]; then
    echo "Synapse 3.0.1 is set up in $home"
    exit 0
fi
command -v mvn >/dev/null || { echo "setup.sh needs Maven (mvn)" >&2; exit 1; }
command -v java >/dev/null || { echo "setup.sh needs Java (java)" >&2; exit 1; }
rm -rf "$home/lib" "$home/modules"
mkdir -p "$home"
mvn="mvn -B -q -s $here/settings.xml -f $here/pom.xml -Dmaven.repo.local=$cache/m2"
# The jars on the class path; the WS-Addressing module (a .mar) in the Axis2 repository's modules/.
$mvn dependency:copy-dependencies -DoutputDirectory="$home/lib" -DexcludeTypes=mar
$mvn dependency:copy-dependencies -DoutputDirectory="$home/modules" -DincludeTypes=mar
touch "$home/ready"
echo "Synapse 3.0.1 is set up in $home ($(ls "$home/lib" | wc -l) jars)"
