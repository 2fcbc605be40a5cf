# Sourced by the launchers in this directory: runs one benchmark class of the benchmarks module
# from the repository root, from the module's jar (benchmarks/target/benchmarks.jar) and its runtime
# dependencies (benchmarks/target/lib: the SDK, the agent, the providers and what they need). Builds
# the module (and the modules it depends on) first if its jar is missing or older than its sources.
#   source "$(dirname "${BASH_SOURCE[0]}")/launch.sh"
#   launch [--jdk-only] <main class> [java options...] -- [bench arguments...]
# --jdk-only puts the module's jar alone on the classpath (the agent benchmarks: JDK only, so the
# benchmark JVM is the same floor it always was). SAMPLES_JAR=path runs the benchmark against another
# build's samples jar (SDK + agent + dependencies in one jar) instead of target/lib (a before/after run).
bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench_jar="$bench_root/benchmarks/target/benchmarks.jar"
bench_lib="$bench_root/benchmarks/target/lib"
bench_java="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  bench_java="$JAVA_HOME/bin/java"
fi

# Builds the module unless its jar and dependencies are there and no source is newer than the jar.
bench_build() {
  local module="$bench_root/benchmarks"
  if [[ -f "$bench_jar" && -d "$bench_lib" ]] \
      && [[ -z "$(find "$module/src" "$module/pom.xml" -newer "$bench_jar" -print -quit)" ]]; then
    return 0
  fi
  echo "$(basename "$0"): building $bench_jar" >&2
  (cd "$bench_root" && ./mvnw -q -B -pl benchmarks -am package -DskipTests)
}

# Builds the agent's runnable jar if it is missing (the agent benchmarks start it).
bench_agent_jar() {
  local jar="$bench_root/container-agent/target/container-agent.jar"
  if [[ ! -f "$jar" ]]; then
    echo "$(basename "$0"): $jar is missing; building it" >&2
    (cd "$bench_root" && ./mvnw -q -B -pl container-agent package -DskipTests)
  fi
}

launch() {
  local jdk_only=false
  if [[ "${1:-}" == "--jdk-only" ]]; then
    jdk_only=true
    shift
  fi
  local main="$1"
  shift
  local java_opts=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    java_opts+=("$1")
    shift
  done
  [[ $# -gt 0 ]] && shift
  bench_build
  local cp="$bench_jar" f
  if [[ "$jdk_only" == false ]]; then
    if [[ -n "${SAMPLES_JAR:-}" ]]; then
      cp+=":$SAMPLES_JAR"
    else
      for f in "$bench_lib"/*.jar; do
        cp+=":$f"
      done
    fi
    java_opts+=(-Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
  fi
  cd "$bench_root"
  exec "$bench_java" ${java_opts[@]+"${java_opts[@]}"} -cp "$cp" "$main" "$@"
}
