#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the Postgres adapter's tests: Debian's postgresql,
# `initdb` in a directory of its own, listening only on a unix socket there, run as the
# `postgres` system user when this script runs as root.
#
#   bash scripts/pg-cluster.sh start [DIR]   start (or reuse) it; prints a connection URL last
#   bash scripts/pg-cluster.sh stop [DIR]    stop it and remove DIR
#
# DIR defaults to $CRAG_PG_DIR or /tmp/crag-pg.
set -euo pipefail

DIR="${2:-${CRAG_PG_DIR:-/tmp/crag-pg}}"
log() { echo "pg-cluster: $*" >&2; }
die() { echo "pg-cluster: error: $*" >&2; exit 1; }

bindir() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return
    fi
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    [[ -n "$d" && -x "$d/initdb" ]] || die "PostgreSQL is not installed (apt-get install postgresql)"
    echo "$d"
}

as_owner() {
    if [[ "$(id -u)" -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

url() {
    echo "postgres://postgres@localhost/postgres?host=$DIR"
}

start() {
    local bin
    bin="$(bindir)"
    if [[ -S "$DIR/.s.PGSQL.5432" ]] && as_owner "$bin/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
        log "cluster already running in $DIR"
        url
        return
    fi
    if [[ "$(id -u)" -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || die "no postgres system user (install Debian's postgresql)"
    fi
    mkdir -p "$DIR"
    [[ "$(id -u)" -eq 0 ]] && chown postgres "$DIR"
    chmod 700 "$DIR"
    if [[ ! -f "$DIR/data/PG_VERSION" ]]; then
        as_owner "$bin/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1 \
            || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    fi
    as_owner "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "-k $DIR -c listen_addresses='' -c fsync=off -c max_connections=100" start >/dev/null \
        || { tail -20 "$DIR/server.log" >&2; die "pg_ctl start failed"; }
    log "cluster running on the unix socket in $DIR"
    url
}

stop() {
    local bin
    bin="$(bindir)"
    if [[ -f "$DIR/data/PG_VERSION" ]]; then
        as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    url) url ;;
    *) die "unknown command ${1} (start, stop, url)" ;;
esac
