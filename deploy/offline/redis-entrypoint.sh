#!/bin/sh
# The offline Redis image's entry point, as the official image's: run as the redis user, data in /data, and
# without a configuration file listen on every address of the container (protected mode would refuse the
# other services: the network it sits on is what guards it, as in deploy/compose.yaml's internal `backend`).
set -eu
if [ "${1:-}" = "redis-server" ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data
  shift
  exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
fi
exec "$@"
