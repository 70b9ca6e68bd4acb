#!/usr/bin/env bash
# Sourced by the JVM test peers' scripts: `maven_lib NAME DEPENDENCIES_XML [EXCLUDED_ARTIFACT_IDS]`
# resolves the given <dependency> elements and their runtime dependencies from
# Maven Central only (a mirror for every repository a pom names: no other
# repository is reachable here) into ~/.cache/meshgate/NAME/lib, once; later
# calls only check the marker. Prints the lib/ path.
maven_lib() {
  local name="$1" deps="$2" excludes="${3:-}"
  local cache="${MESHGATE_CACHE:-$HOME/.cache/meshgate}/$name"
  mkdir -p "$cache"
  exec 9>"$cache.lock"
  flock 9
  if [ ! -f "$cache/lib/.complete" ]; then
    command -v java >/dev/null || { echo "meshgate: java (17+) is required for the $name test peer" >&2; return 1; }
    command -v mvn >/dev/null || { echo "meshgate: mvn is required to fetch the $name jars" >&2; return 1; }
    echo "meshgate: fetching $name jars from Maven Central into $cache/lib" >&2
    cat >"$cache/settings.xml" <<XML
<settings><mirrors><mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>https://repo1.maven.org/maven2</url></mirror></mirrors></settings>
XML
    cat >"$cache/pom.xml" <<XML
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>meshgate.peers</groupId>
  <artifactId>$name</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
XML
    rm -rf "$cache/lib"
    mvn -B -s "$cache/settings.xml" -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$cache/lib" -DexcludeArtifactIds="$excludes" >"$cache/mvn.log" 2>&1 \
      || { tail -40 "$cache/mvn.log" >&2; return 1; }
    touch "$cache/lib/.complete"
  fi
  exec 9>&-
  echo "$cache/lib"
}
