#!/usr/bin/env bash
# HiveServer2 test peer (docs/sources.md "HiveServer2 test
# peer"): Apache Hive 4.0.1 (hive-service, hive-exec, the standalone metastore
# with DataNucleus and embedded Derby) plus the Hadoop 3.3.6 client and HDFS
# jars it loads even on the local file system, from Maven Central, cached
# under ~/.cache/meshgate (about 300 MB, once). Java 17 runs them with the
# --add-opens list in test/helpers/peers/hive.ts. Idempotent. Prints the lib/ path.
# lib/ also gets the peer's password check (hive-auth/PeerPasswords.java), compiled here.
# Order matters: Maven picks the first declared version of a shared dependency,
# and Hadoop's (guava 27, netty 4.1) must win over the older ones Hive names.
# Left out: pac4j (SAML login, whose dependencies live outside Maven Central)
# and the log4j 1 bindings (Hive logs through log4j2).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/maven-lib.sh"
HIVE_VERSION=4.0.1
HADOOP_VERSION=3.3.6
dep() { echo "    <dependency><groupId>$1</groupId><artifactId>$2</artifactId><version>$3</version>${4:-}</dependency>"; }
lib="$(maven_lib "hive-$HIVE_VERSION" "
$(dep org.apache.hive hive-service $HIVE_VERSION '<exclusions><exclusion><groupId>org.pac4j</groupId><artifactId>*</artifactId></exclusion></exclusions>')
$(dep org.apache.hive hive-exec $HIVE_VERSION)
$(for a in hadoop-common hadoop-mapreduce-client-core hadoop-mapreduce-client-common hadoop-hdfs-client hadoop-hdfs; do dep org.apache.hadoop $a $HADOOP_VERSION; done)
$(dep org.apache.hive hive-standalone-metastore-server $HIVE_VERSION)
$(dep org.datanucleus datanucleus-api-jdo 5.2.8)
$(dep org.datanucleus datanucleus-core 5.2.10)
$(dep org.datanucleus datanucleus-rdbms 5.2.10)
$(dep org.datanucleus javax.jdo 3.2.0-release)
$(dep org.apache.derby derby 10.14.2.0)
$(dep org.apache.hadoop hadoop-client-runtime $HADOOP_VERSION)" \
  slf4j-reload4j,slf4j-log4j12)"
# The password check the peer uses with `users` (CUSTOM authentication), compiled against those jars
# into lib/ once per source change; built beside and renamed, so a HiveServer2 starting meanwhile never
# sees half a jar.
auth_src="$(dirname "${BASH_SOURCE[0]}")/hive-auth/PeerPasswords.java"
auth_jar="$lib/meshgate-peer-auth.jar"
if [ ! -f "$auth_jar" ] || [ "$auth_src" -nt "$auth_jar" ]; then
  build="$(mktemp -d "$lib/../auth-build.XXXXXX")"
  javac -d "$build" -cp "$lib/*" "$auth_src" >&2
  jar --create --file "$build/auth.jar" -C "$build" meshgate
  mv "$build/auth.jar" "$auth_jar"
  rm -rf "$build"
fi
echo "$lib"
