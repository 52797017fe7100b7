#!/usr/bin/env bash
# Start the local services idempotently: Redis on 127.0.0.1:6379, PostgreSQL with a logomesh role/database,
# and a Docker engine. Each is left alone when it already answers.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf 'services: %s\n' "$*" >&2; }

# Redis
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting redis"
  redis-server --daemonize yes --port 6379 --bind 127.0.0.1 --save "" --appendonly no >/dev/null
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

# PostgreSQL
PGVER=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
if [ -n "$PGVER" ]; then
  if ! pg_lsclusters -h 2>/dev/null | awk '{print $4}' | grep -q online; then
    log "starting postgresql $PGVER"
    pg_lsclusters -h | grep -q "^$PGVER main" || pg_createcluster "$PGVER" main >/dev/null
    pg_ctlcluster --skip-systemctl-redirect "$PGVER" main start
  fi
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='logomesh'\"" | grep -q 1 \
    || su postgres -c "psql -qc \"CREATE ROLE logomesh LOGIN SUPERUSER PASSWORD 'logomesh'\""
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='logomesh'\"" | grep -q 1 \
    || su postgres -c "createdb -O logomesh logomesh"
fi

# Docker engine
if ! docker info >/dev/null 2>&1; then
  if command -v dockerd >/dev/null 2>&1; then
    log "starting dockerd"
    mkdir -p /var/log
    nohup dockerd >/var/log/logomesh-dockerd.log 2>&1 &
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
    docker info >/dev/null 2>&1 || log "dockerd did not come up; see /var/log/logomesh-dockerd.log"
  fi
fi
