#!/usr/bin/env bash
# Starts a PostgreSQL server WITH pgvector for the tests (Debian 12's PostgreSQL 15
# has no pgvector package). The binaries come from the PyPI wheel of `pgserver`
# (PostgreSQL 16 with pgvector 0.6), fetched once into the cache directory (default
# target/pgvector). Idempotent: a server this script started and that still runs is
# reused. Prints the URL of its `test` database, e.g.
#   postgres://postgres@127.0.0.1:55432/test
# (progress goes to stderr). The server listens on 127.0.0.1 only, trusts every local
# login and keeps its data, socket and log under the cache directory.
#
#   scripts/start-pgvector-server.sh [CACHE_DIR]        start (or reuse), print the URL
#   scripts/start-pgvector-server.sh --stop [CACHE_DIR] stop it
#
# PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system
# user (OXYDRA_PGVECTOR_USER to name another; created when missing), from
# /var/tmp/oxydra-pgvector when that user cannot reach the cache directory. The first
# free port from 55432 (OXYDRA_PGVECTOR_PORT) is taken.
set -euo pipefail
cd "$(dirname "$0")/.."

stop=false
if [ "${1:-}" = "--stop" ]; then
  stop=true
  shift
fi
cache="$(mkdir -p "${1:-target/pgvector}" && realpath "${1:-target/pgvector}")"
first_port="${OXYDRA_PGVECTOR_PORT:-55432}"

say() { echo "start-pgvector-server: $*" >&2; }

# As root, run the server's programs as an unprivileged user.
as_server_user() {
  if [ "$(id -u)" = "0" ]; then
    runuser -u "$server_user" -- "$@"
  else
    "$@"
  fi
}
server_user="$(id -un)"
if [ "$(id -u)" = "0" ]; then
  server_user="${OXYDRA_PGVECTOR_USER:-postgres}"
  if ! id "$server_user" >/dev/null 2>&1; then
    say "creating system user $server_user to run the server (PostgreSQL refuses root)"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$server_user"
  fi
fi

# The server's user must reach the cache directory (a checkout under /root is out of
# its reach): else use one it can reach.
if [ "$(id -u)" = "0" ] && ! runuser -u "$server_user" -- test -x "$cache"; then
  fallback="/var/tmp/oxydra-pgvector"
  say "user $server_user cannot reach $cache: using $fallback"
  mkdir -p "$fallback"
  chmod 755 "$fallback"
  cache="$fallback"
fi
version="0.1.4"
install="$cache/pgserver-$version"
bin="$install/pgserver/pginstall/bin"
data="$cache/data"
socket="$cache/run"
log="$cache/server.log"

# The running server's port, from its pid file, if it runs.
running_port() {
  [ -f "$data/postmaster.pid" ] || return 1
  [ -x "$bin/pg_ctl" ] || return 1
  as_server_user "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1 || return 1
  sed -n 4p "$data/postmaster.pid"
}

if $stop; then
  if running_port >/dev/null; then
    as_server_user "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
  else
    say "no server running in $data"
  fi
  exit 0
fi

# 1. The binaries: the wheel, unpacked keeping its layout (the programs find their
# libraries in ../../../pgserver.libs) and the files' modes.
if [ ! -x "$bin/postgres" ]; then
  pip=(python3 -m pip)
  if ! "${pip[@]}" --version >/dev/null 2>&1; then
    say "error: pip is needed to fetch the pgserver wheel (python3 -m pip)"
    exit 1
  fi
  download="$(mktemp -d)"
  trap 'rm -rf "$download"' EXIT
  say "fetching pgserver $version (PostgreSQL 16 with pgvector) from PyPI"
  "${pip[@]}" download --quiet --no-deps --only-binary=:all: \
    --platform "manylinux2014_$(uname -m)" --python-version 3.11 \
    --dest "$download" "pgserver==$version" >&2
  wheel="$(find "$download" -name '*.whl' | head -n 1)"
  if [ -z "$wheel" ]; then
    say "error: pip downloaded no wheel of pgserver"
    exit 1
  fi
  rm -rf "$install.part"
  python3 - "$wheel" "$install.part" <<'PY'
import os, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        path = z.extract(info, target)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
PY
  rm -rf "$install"
  mv "$install.part" "$install"
fi
if ! "$bin/postgres" --version >/dev/null 2>&1; then
  say "error: $bin/postgres does not run on this machine:"
  "$bin/postgres" --version >&2 || true
  exit 1
fi
if ! as_server_user test -x "$bin/postgres"; then
  say "error: user $server_user cannot run $bin/postgres (pass another CACHE_DIR)"
  exit 1
fi

# 2. A running server: reuse it.
if port="$(running_port)"; then
  say "reusing the server in $data (port $port)"
  echo "postgres://postgres@127.0.0.1:$port/test"
  exit 0
fi

# 3. The data directory, owned by the server's user.
mkdir -p "$socket"
if [ ! -f "$data/PG_VERSION" ]; then
  rm -rf "$data"
  mkdir -p "$data"
  chown "$server_user" "$data" "$socket"
  say "initialising $data"
  as_server_user "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >&2
fi
chown "$server_user" "$socket"

# 4. A free port, then start.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port="$first_port"
while port_in_use "$port"; do
  port=$((port + 1))
  if [ "$port" -ge $((first_port + 100)) ]; then
    say "error: no free port in $first_port..$((first_port + 99))"
    exit 1
  fi
done
say "starting PostgreSQL with pgvector on 127.0.0.1:$port (log: $log)"
touch "$log"
chown "$server_user" "$log"
# A throwaway test server: a commit need not wait for the disk (fsync off,
# synchronous_commit off). What a commit makes visible to other connections is
# unchanged; only a crash of this server could lose the last commits.
if ! as_server_user "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
  -o "-p $port -k $socket -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >&2; then
  say "error: the server did not start; its log:"
  tail -n 20 "$log" >&2
  exit 1
fi

# 5. The `test` database the tests use.
psql=("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -X -q -t -A)
if [ "$("${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'test'")" != "1" ]; then
  "${psql[@]}" -d postgres -c "CREATE DATABASE test" >&2
fi
echo "postgres://postgres@127.0.0.1:$port/test"
