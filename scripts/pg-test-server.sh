# Start / stop a throwaway PostgreSQL server on 127.0.0.1 for the tests (sourced by .ci/run).
# Exports AUTOTILE_TEST_PG, the URL the PostgreSQL tests use; without it they are skipped.

pg_test_start() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$bin" ]; then
    echo "pg-test-server: PostgreSQL is not installed" >&2
    return 1
  fi
  PG_TEST_PORT=${PG_TEST_PORT:-55432}
  PG_TEST_DIR=$(mktemp -d /tmp/autotile-pg.XXXXXX)
  chown postgres "$PG_TEST_DIR" 2>/dev/null || true
  local as=""
  [ "$(id -u)" = 0 ] && as="runuser -u postgres --"
  $as "$bin/initdb" -D "$PG_TEST_DIR/data" -A trust -U postgres >/dev/null
  $as "$bin/pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/log" -w \
    -o "-p $PG_TEST_PORT -k $PG_TEST_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null
  PG_TEST_BIN=$bin
  export AUTOTILE_TEST_PG="postgresql://postgres@127.0.0.1:$PG_TEST_PORT/postgres"
}

pg_test_stop() {
  [ -n "${PG_TEST_DIR:-}" ] || return 0
  local as=""
  [ "$(id -u)" = 0 ] && as="runuser -u postgres --"
  $as "$PG_TEST_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_TEST_DIR"
}
