#!/bin/sh
# Entry point of the sandbox agent image (/opt/sandbox-agent/start.sh), run by tini as root.
# Arguments are the agent's (the image's CMD). Environment:
#   SANDBOX_NETWORK=off   no new outgoing connection except on loopback (needs --cap-add NET_ADMIN
#                         for this script only; the agent never keeps it). Default: on.
#   SANDBOX_NETWORK=egress  commands reach the network only through the agent's egress proxy,
#                         which decides by SANDBOX_EGRESS_POLICY (JSON, what --egress-policy
#                         reads). Needs NET_ADMIN as off does, and --command-user.
#   SANDBOX_EGRESS_SECRETS  with egress: secrets the proxy puts into requests to their hosts
#                         (JSON, what --egress-secrets reads); commands see only placeholders.
#   SANDBOX_AGENT_TOKEN   the agent's token (or pass --token-file); only root can read it here.
#   JDK_JAVA_OPTIONS      more JVM flags (the java launcher reads them; commands do not get them).
# 1. SANDBOX_NETWORK=off: installs an nftables ruleset whose output chain drops every packet that
#    is neither on loopback nor part of a connection that already exists, so the published port
#    still answers (its replies belong to connections the client opened) while commands can open
#    no connection anywhere else: not to the internet, the host, its bridge or other containers.
#    If that fails the script stops with status 78: never run with the network open when it was
#    asked to be off.
#    SANDBOX_NETWORK=egress: the same, except that root (the agent, whose egress proxy connects
#    out for the commands) may open connections, and nobody else may reach port 53 on loopback
#    (an engine's embedded resolver listens there; names are the proxy's to resolve). Commands
#    run as --command-user, never root, so the only way out they have is the proxy on loopback.
#    The policy goes to a file only root can read, given to the agent as --egress-policy; so do
#    the secrets, as --egress-secrets, and neither variable reaches the agent's environment.
# 2. Drops for good, before the JVM starts, every capability except the four the agent needs:
#    SETUID, SETGID (start commands as --command-user), SETPCAP (clear the commands' bounding
#    set) and KILL (signal them: they run under another uid). NET_ADMIN goes too, so neither the
#    agent nor a command can change the ruleset. This also holds when the engine granted more
#    (docker run with its default capabilities): the JVM's bounding set never has more than the four.
set -eu

dir=/opt/sandbox-agent
fail() {
  echo "sandbox-agent: $1" >&2
  exit "${2:-1}"
}

# Installs the output chain whose rules are given on stdin, atomically (nft applies the whole
# file or nothing); "add table" + "flush table" make it idempotent should the network namespace
# outlive the container (a pod's shared one). Stops with status 78 if it cannot.
firewall() {
  rules=$(cat)
  if ! err=$(printf 'add table inet sandbox\nflush table inet sandbox\ntable inet sandbox {\n  chain output {\n    type filter hook output priority 0; policy drop;\n%s\n  }\n}\n' "$rules" | nft -f - 2>&1) \
      || ! nft list chain inet sandbox output >/dev/null 2>&1; then
    fail "SANDBOX_NETWORK=$SANDBOX_NETWORK, but the firewall that cuts the network off could not be installed \
(${err:-no ruleset}); the container needs --cap-add NET_ADMIN for that. Not starting with the network open." 78
  fi
}

[ -z "${SANDBOX_EGRESS_SECRETS:-}" ] || [ "${SANDBOX_NETWORK:-on}" = egress ] \
  || fail "SANDBOX_EGRESS_SECRETS needs SANDBOX_NETWORK=egress (the proxy that puts them in)" 2

case "${SANDBOX_NETWORK:-on}" in
  on) ;;
  off)
    firewall <<'RULES'
    oif "lo" accept
    ct state established,related accept
RULES
    ;;
  egress)
    [ -n "${SANDBOX_EGRESS_POLICY:-}" ] || fail "SANDBOX_NETWORK=egress needs SANDBOX_EGRESS_POLICY (the policy's JSON)" 2
    case " $* " in
      *" --command-user "* | *" --command-user="*) ;;
      *) fail "SANDBOX_NETWORK=egress needs --command-user: commands run as root could bypass the proxy" 2 ;;
    esac
    firewall <<'RULES'
    ct state established,related accept
    meta skuid 0 accept
    oif "lo" th dport 53 drop
    oif "lo" accept
RULES
    policy=$(umask 077 && mktemp /tmp/.sandbox-egress-policy.XXXXXX) || fail "cannot write the egress policy" 1
    printf '%s' "$SANDBOX_EGRESS_POLICY" > "$policy"
    unset SANDBOX_EGRESS_POLICY
    set -- "$@" --egress-policy "$policy"
    if [ -n "${SANDBOX_EGRESS_SECRETS:-}" ]; then
      secrets=$(umask 077 && mktemp /tmp/.sandbox-egress-secrets.XXXXXX) || fail "cannot write the egress secrets" 1
      printf '%s' "$SANDBOX_EGRESS_SECRETS" > "$secrets"
      set -- "$@" --egress-secrets "$secrets"
    fi
    unset SANDBOX_EGRESS_SECRETS
    ;;
  *) fail "SANDBOX_NETWORK must be 'on', 'off' or 'egress', not '$SANDBOX_NETWORK'" 2 ;;
esac

# KILL (5), SETGID (6), SETUID (7), SETPCAP (8).
keep=0x1e0
cap() { echo $((0x$(sed -n "s/^$1:[[:space:]]*//p" /proc/$$/status))); } # this shell's, not sed's
bounding=$(cap CapBnd)
if [ $((bounding & ~keep)) -ne 0 ] && [ $(($(cap CapEff) & 0x100)) -eq 0 ]; then
  fail "the container has capabilities beyond SETUID, SETGID, SETPCAP and KILL but not SETPCAP, \
which dropping them takes; run it with --cap-drop ALL --cap-add SETUID,SETGID,SETPCAP,KILL"
fi

# The AppCDS archive of the agent's classes, made when the image was built; the JVM checks that it
# matches this JVM and jar, and starts without it (only slower) if it does not.
cds=
[ -f "$dir/agent.jsa" ] && cds="-XX:SharedArchiveFile=$dir/agent.jsa"

# The JVM flags (why each: the Dockerfile). setpriv: root keeps across exec only the capabilities
# in its bounding and inheritable sets, so trimming those two trims the JVM to the four.
# shellcheck disable=SC2086 # $cds is one word or none
exec setpriv --inh-caps=-all --bounding-set=-all,+setuid,+setgid,+setpcap,+kill \
  "$dir/jre/bin/java" -XX:+UseSerialGC -Xss512k -Xms8m -XX:MaxRAMPercentage=50 -XX:-UsePerfData $cds \
  -jar "$dir/container-agent.jar" "$@"
