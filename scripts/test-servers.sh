#!/usr/bin/env bash
# `npm run test:servers`: installs, on Debian or Ubuntu, the servers that `npm run test:all`
# starts for itself (redis-server and redis-cli, valkey-server, PostgreSQL, PgBouncer and
# ZooKeeper with a Java runtime), each only when it is missing. It starts no system service:
# the tests start throwaway servers of their own on free loopback ports. Runs as root, or
# through sudo.
set -euo pipefail

# Only a server that is missing needs apt-get: a machine that has them all needs nothing here.
require_apt() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$1 is missing, and test:servers installs through apt-get (Debian or Ubuntu). Install" >&2
    echo "it by hand (CONTRIBUTING.md lists what npm run test:all needs)." >&2
    exit 1
  fi
}

install_from_debian() {
  require_apt "$1"
  echo "$1 is missing: installing it from Debian's packages"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$1" >/dev/null
}

# The mirror of the machine's Debian sources (deb822 .sources files or one-line .list files).
debian_mirror() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk '/^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i !~ /-security$/) s = 1 }
      /^$/ { if (uri && s) { print uri; found = 1; exit } uri = ""; s = 0 }
      END { if (!found && uri && s) print uri }' "$file" | grep -v -- '-security' && return
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { print $i; exit } }' |
    grep -v -- '-security' | head -n 1 || true
}

# valkey-server from "<codename>-backports", without starting a system server of its own: the
# package's service would take port 6379, where a Redis the machine already runs may listen.
install_valkey_from_backports() {
  require_apt valkey-server
  echo "valkey-server is missing: installing it from Debian's backports"
  local sudo="" codename mirror list=/etc/apt/sources.list.d/ci-backports.list
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  mirror="$(debian_mirror)"
  [ -n "$mirror" ] || { echo "no Debian mirror found in the apt sources" >&2; return 1; }
  echo "deb $mirror $codename-backports main" | $sudo tee "$list" >/dev/null
  $sudo apt-get update -qq
  install_without_service valkey-server -t "$codename-backports" valkey-server
}

# Installs packages ("$2"...) without starting the system service ("$1") they bring: it would
# take a standard port (6379, 6432) where the machine may already run a server of its own.
install_without_service() {
  local sudo="" service="$1" policy=/usr/sbin/policy-rc.d added=""
  shift
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  [ -z "$added" ] || $sudo rm -f "$policy"
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
  fi
}

install_pgbouncer() {
  require_apt pgbouncer
  echo "pgbouncer is missing: installing it from Debian's packages"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  install_without_service pgbouncer pgbouncer
}

# The tests start throwaway redis-server processes of their own...
command -v redis-server >/dev/null 2>&1 || install_from_debian redis-server
redis-server --version
# ...and redis-cli, which forms the test Redis Cluster (Debian: redis-tools).
command -v redis-cli >/dev/null 2>&1 || install_from_debian redis-tools
# ...and valkey-server (Valkey 8), to run the Redis store on Valkey. Debian 12 has it in its
# backports suite: added, from the mirror the machine already uses, when it is missing.
command -v valkey-server >/dev/null 2>&1 || install_valkey_from_backports
valkey-server --version
# ...and, for the SQL fencing test, a throwaway PostgreSQL (initdb + pg_ctl).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 ||
  install_from_debian postgresql
# ...and a throwaway PgBouncer in front of it, in transaction mode.
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || install_pgbouncer
# ...and throwaway ZooKeeper servers and ensembles, from Debian's package (with a Java runtime).
[ -f /usr/share/java/zookeeper.jar ] || install_from_debian zookeeper

echo "The servers npm run test:all needs are installed."
