# Shared by run.sh, cancel.sh and files.sh: runs one benchmark source file against the samples
# jar (SDK + agent + dependencies), building the jar first if it is missing. The benchmark is
# compiled together with the plot writer bench/Svg.java and bench/RssSampler.java into a temporary directory.
#   source "$here/launch.sh"; launch <Bench>.java [java options...] -- [bench arguments...]
# SAMPLES_JAR=path runs the benchmark against another build's samples jar (a before/after run).
launch() {
  local main="$1"
  shift
  local java_opts=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    java_opts+=("$1")
    shift
  done
  [[ $# -gt 0 ]] && shift
  local here root jar java_bin javac_bin
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(cd "$here/../.." && pwd)"
  jar="${SAMPLES_JAR:-$root/samples/target/samples.jar}" # another build's jar, for before/after runs
  if [[ ! -f "$jar" ]]; then
    echo "$(basename "$0"): $jar is missing; building it" >&2
    (cd "$root" && ./mvnw -q -B -pl samples -am package -DskipTests)
  fi
  java_bin="java"
  javac_bin="javac"
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java_bin="$JAVA_HOME/bin/java"
    javac_bin="$JAVA_HOME/bin/javac"
  fi
  launch_classes="$(mktemp -d)"
  trap 'rm -rf "$launch_classes"' EXIT
  "$javac_bin" -nowarn -cp "$jar" -d "$launch_classes" "$here/$main" "$root/bench/Svg.java" "$root/bench/RssSampler.java"
  cd "$root"
  "$java_bin" ${java_opts[@]+"${java_opts[@]}"} -cp "$launch_classes:$jar" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    "${main%.java}" "$@"
}
