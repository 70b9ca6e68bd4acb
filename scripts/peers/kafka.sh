#!/usr/bin/env bash
# Apache Kafka test peer: the official broker jars
# (org.apache.kafka:kafka_2.13 and its runtime dependencies, log4j2 behind
# slf4j 1.x as in the binary distribution) from Maven Central, cached under
# ~/.cache/meshgate. Java 17 runs them; test/helpers/peers/kafka.ts formats and
# starts a KRaft node. Idempotent. Prints the lib/ path.
# 4.2.x: the newest line @platformatic/kafka (the client the tests use) supports.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/maven-lib.sh"
KAFKA_VERSION=4.2.1
LOG4J_VERSION=2.24.3
maven_lib "kafka-$KAFKA_VERSION" "
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>"
