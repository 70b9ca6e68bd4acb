#!/usr/bin/env bash
# Apache Kafka test peer (DESIGN.md §7): the official broker jars
# (org.apache.kafka:kafka_2.13 and its runtime dependencies) resolved from
# Maven Central with a generated pom, copied into a cached lib/ folder. Java 17
# runs them; test/helpers/peers/kafka.ts formats and starts a KRaft node.
# Idempotent: a second run only checks the marker. Prints the lib/ path.
set -euo pipefail
KAFKA_VERSION=4.2.1
cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}/kafka-$KAFKA_VERSION"
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9
if [ ! -f "$cache/lib/.complete" ]; then
  command -v java >/dev/null || { echo "meshgate: java (17+) is required for the Kafka test peer" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "meshgate: mvn is required to fetch the Kafka jars" >&2; exit 1; }
  echo "meshgate: fetching Kafka $KAFKA_VERSION jars from Maven Central into $cache/lib" >&2
  cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>meshgate.peers</groupId>
  <artifactId>kafka-peer</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$cache/lib"
  mvn -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/lib" >"$cache/mvn.log" 2>&1 \
    || { tail -40 "$cache/mvn.log" >&2; exit 1; }
  touch "$cache/lib/.complete"
fi
echo "$cache/lib"
