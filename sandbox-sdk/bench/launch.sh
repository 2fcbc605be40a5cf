# Shared by run.sh, cancel.sh and files.sh: runs one benchmark source file against the samples
# jar (SDK + agent + dependencies), building the jar first if it is missing.
#   source "$here/launch.sh"; launch <Bench>.java [java options...] -- [bench arguments...]
launch() {
  local main="$1"
  shift
  local java_opts=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    java_opts+=("$1")
    shift
  done
  [[ $# -gt 0 ]] && shift
  local here root jar java_bin
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(cd "$here/../.." && pwd)"
  jar="$root/samples/target/samples.jar"
  if [[ ! -f "$jar" ]]; then
    echo "$(basename "$0"): $jar is missing; building it" >&2
    (cd "$root" && ./mvnw -q -B -pl samples -am package -DskipTests)
  fi
  java_bin="java"
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java_bin="$JAVA_HOME/bin/java"
  fi
  cd "$root"
  exec "$java_bin" ${java_opts[@]+"${java_opts[@]}"} -cp "$jar" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    "$here/$main" "$@"
}
