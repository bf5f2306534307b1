#!/usr/bin/env bash
# Fetch the Java parts of Flink runs once, at install time (never when a cluster starts or a job runs):
# Beam's Flink job server, the unshaded beam-runners-flink-1.19:2.62.0 with every jar it depends on, as
# java/flink/pom.xml pins it, resolved from Maven Central into the cache folder the cluster command reads
# ($VLNKIT_JAVA_CACHE or ~/.cache/vlnkit/java). Each jar is then checked against the committed list
# vlnkit/cluster/flink_job_server_jars.sha256; a jar missing from the list, or one not matching, fails the
# install. A cache that already matches is left as it is (no Maven run).
#   scripts/install_java_parts.sh            fetch (if needed) and check
#   scripts/install_java_parts.sh --relist   after a deliberate pin change in the pom: rewrite the list
set -euo pipefail
cd "$(dirname "$0")/.."
LIST=vlnkit/cluster/flink_job_server_jars.sha256
DEST="${VLNKIT_JAVA_CACHE:-$HOME/.cache/vlnkit/java}/beam-flink-job-server-2.62.0"

matches() { [ -d "$DEST" ] && (cd "$DEST" && sha256sum --quiet -c "$OLDPWD/$LIST" >/dev/null 2>&1) \
  && [ "$(ls "$DEST" | wc -l)" -eq "$(grep -c . "$LIST")" ]; }

if [ "${1:-}" != "--relist" ] && matches; then
  echo "Java parts: $(grep -c . "$LIST") pinned jars present and checked in $DEST"
  exit 0
fi
command -v java >/dev/null && command -v mvn >/dev/null || {
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null; }
rm -rf "$DEST.partial" && mkdir -p "$DEST.partial"
mvn -q -B -Dstyle.color=never -f java/flink/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
  -DoutputDirectory="$DEST.partial"
if [ "${1:-}" = "--relist" ]; then
  (cd "$DEST.partial" && sha256sum -- *.jar) > "$LIST"
fi
(cd "$DEST.partial" && sha256sum --quiet -c "$OLDPWD/$LIST") || { echo "Java parts: checksum mismatch" >&2; exit 1; }
[ "$(ls "$DEST.partial" | wc -l)" -eq "$(grep -c . "$LIST")" ] || { echo "Java parts: jars not in $LIST" >&2; exit 1; }
rm -rf "$DEST" && mv "$DEST.partial" "$DEST"
echo "Java parts: $(grep -c . "$LIST") pinned jars fetched and checked into $DEST"
