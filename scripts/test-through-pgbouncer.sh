#!/usr/bin/env bash
# The second pass of the PostgreSQL tests (issue 27): the test files that exercise the service's own queries
# (reads, every kind of write, webhooks, the feed, discovery, migrations, two instances), PostgreSQL half only,
# with TEST_POSTGRES_URL pointed at a PgBouncer in transaction mode started here on a free port. Every test database
# and every service under test then goes through it. Stopped on any exit, failures included.
#
#   scripts/test-through-pgbouncer.sh                  # the files below
#   scripts/test-through-pgbouncer.sh test/list.test.ts   # some files only
#
# Its settings are what docs/postgresql.md tells operators (test/pgbouncer-support.ts starts the same for
# test/pgbouncer.test.ts): a wildcard database entry, because each test file makes databases of its own; trust for
# the tests' one role; nothing in ignore_startup_parameters but extra_float_digits, so a client sending
# statement_timeout at connect would be refused. Needs a built dist/ (the tests start `node dist/cli/main.js`).
#
# PGBOUNCER_BIN picks the PgBouncer. One of 1.21 or later (scripts/build-pgbouncer.sh builds Debian 13's) keeps
# prepared statements: it is told to keep 200, and the services under test DATABASE_POOLER_PREPARES=true
# (TEST_POOLER_PREPARES), so that every query kind runs named through a pooler too.
set -euo pipefail
cd "$(dirname "$0")/.."

PGBOUNCER=${PGBOUNCER_BIN:-/usr/sbin/pgbouncer}
UPSTREAM=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
if [ ! -x "$PGBOUNCER" ]; then
  echo "test-through-pgbouncer: $PGBOUNCER is missing (apt-get install pgbouncer)" >&2
  exit 1
fi

# Not run here: files with no PostgreSQL half, or whose PostgreSQL half tests the tests' own connection to the
# server rather than the service's queries (outage.test.ts cuts and kills connections of its own; crash.test.ts
# and drain.test.ts kill processes, which a pooler does not change), or that the first pass already runs
# through a PgBouncer of its own (pgbouncer.test.ts).
FILES=(
  test/list.test.ts
  test/lifecycle.test.ts
  test/idempotency.test.ts
  test/consistency.test.ts
  test/events-feed.test.ts
  test/webhooks.test.ts
  test/webhook-delivery.test.ts
  test/discovery.test.ts
  test/discovery-search.test.ts
  test/migrations.test.ts
  test/multi-instance.test.ts
  test/hostile-shared-fate.test.ts
)
if [ "$#" -gt 0 ]; then FILES=("$@"); fi

dir=$(mktemp -d /tmp/listing-ci-pgbouncer.XXXXXX)
port=$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close() })")
version=$("$PGBOUNCER" --version | head -n 1)
prepared_settings=""
# The rule is test/pgbouncer-support.ts's keepsPrepared (1.21 or later).
if node --import tsx -e "import('./test/pgbouncer-support.ts').then((m) => process.exit(m.keepsPrepared(process.argv[1]) ? 0 : 1))" "$PGBOUNCER"; then
  prepared_settings="max_prepared_statements = 200"
  export TEST_POOLER_PREPARES=true
fi
upstream_host=$(node -e "console.log(new URL(process.argv[1]).hostname)" "$UPSTREAM")
upstream_port=$(node -e "console.log(new URL(process.argv[1]).port || 5432)" "$UPSTREAM")
upstream_user=$(node -e "console.log(decodeURIComponent(new URL(process.argv[1]).username) || 'postgres')" "$UPSTREAM")

cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=$upstream_host port=$upstream_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 2000
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
$prepared_settings
INI
echo "\"$upstream_user\" \"\"" >"$dir/userlist.txt"

as_user=()
if [ "$(id -u)" = 0 ]; then
  # PgBouncer will not run as root: it drops to the PostgreSQL server's user, which must read its files.
  chown -R postgres: "$dir"
  as_user=(-u postgres)
fi

stop() {
  local code=$?
  if [ -s "$dir/pgbouncer.pid" ]; then
    local pid
    pid=$(cat "$dir/pgbouncer.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if [ "$code" != 0 ] && [ -f "$dir/pgbouncer.log" ]; then
    echo "test-through-pgbouncer: PgBouncer's log, last lines:" >&2
    tail -n 30 "$dir/pgbouncer.log" >&2
  fi
  rm -rf "$dir"
  exit "$code"
}
trap stop EXIT

"$PGBOUNCER" -d "${as_user[@]}" "$dir/pgbouncer.ini"
for _ in $(seq 1 50); do
  if pg_isready -h 127.0.0.1 -p "$port" -q; then break; fi
  sleep 0.2
done
pg_isready -h 127.0.0.1 -p "$port" -q || { echo "test-through-pgbouncer: PgBouncer does not answer on $port" >&2; exit 1; }

through=$(node -e "const u = new URL(process.argv[1]); u.hostname = '127.0.0.1'; u.port = process.argv[2]; console.log(u.toString())" "$UPSTREAM" "$port")
echo "test-through-pgbouncer: ${#FILES[@]} file(s), PostgreSQL half, through $version (transaction mode${prepared_settings:+, keeping prepared statements}) at 127.0.0.1:$port"
started=$(date +%s)
TEST_POSTGRES_URL=$through DIALECTS=postgres node --test --test-concurrency=2 --test-timeout=300000 \
  --import tsx --import ./test/file-timeout.ts "${FILES[@]}"
echo "test-through-pgbouncer: passed in $(( $(date +%s) - started )) s"
