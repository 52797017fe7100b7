#!/bin/sh
# The offline engine image's entry point: what docker:dind's does for deploy/compose.yaml's `dind` service.
# With DOCKER_TLS_CERTDIR set it makes (once per volume) a CA, a server certificate naming this host, its
# addresses and DOCKER_TLS_SAN, and a client certificate, then serves 2376 with --tlsverify: only a holder of the
# client certificate is served. Without it the engine listens on its unix socket only (never unauthenticated TCP).
set -eu

# Not privileged but holding CAP_SYS_ADMIN (a host whose own bounding set lacks a capability cannot start
# privileged containers): the cgroup v1 hierarchies are mounted read-only. Then the engine runs in a cgroup
# namespace of its own, with the hierarchies mounted afresh, writable, as /proc/self/cgroup lists them, so it
# can put its containers' limits in place.
cgroup_writable() { mkdir /sys/fs/cgroup/cpuset/.probe 2>/dev/null && rmdir /sys/fs/cgroup/cpuset/.probe; }
if [ -d /sys/fs/cgroup/cpuset ] && ! cgroup_writable; then
  if [ -z "${LOGOMESH_ENGINE_CGROUPNS:-}" ]; then
    LOGOMESH_ENGINE_CGROUPNS=1 exec unshare --cgroup "$0" "$@"
  fi
  mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup
  while IFS=: read -r _ controllers _; do
    [ -n "$controllers" ] || continue
    dir=/sys/fs/cgroup/${controllers#name=}
    mkdir -p "$dir"
    mount -t cgroup -o "$controllers" cgroup "$dir"
  done </proc/self/cgroup
fi

certs=${DOCKER_TLS_CERTDIR:-}

generate() {
  dir=$1 cn=$2 ext=$3
  mkdir -p "$dir"
  openssl genrsa -out "$dir/key.pem" 4096 2>/dev/null
  openssl req -new -key "$dir/key.pem" -subj "/CN=$cn" -out "$dir/csr.pem"
  printf '%s\n' "$ext" >"$dir/openssl.cnf"
  openssl x509 -req -in "$dir/csr.pem" -CA "$certs/ca/cert.pem" -CAkey "$certs/ca/key.pem" -CAcreateserial \
    -out "$dir/cert.pem" -days 825 -extfile "$dir/openssl.cnf" 2>/dev/null
  cp "$certs/ca/cert.pem" "$dir/ca.pem"
  rm -f "$dir/csr.pem" "$dir/openssl.cnf"
}

if [ -n "$certs" ]; then
  if [ ! -s "$certs/server/cert.pem" ] || [ ! -s "$certs/client/cert.pem" ]; then
    umask 077
    mkdir -p "$certs/ca"
    openssl genrsa -out "$certs/ca/key.pem" 4096 2>/dev/null
    openssl req -new -key "$certs/ca/key.pem" -x509 -days 825 -subj "/CN=logomesh engine CA" \
      -out "$certs/ca/cert.pem"
    san="DNS:$(hostname),DNS:localhost,IP:127.0.0.1"
    for ip in $(hostname -i 2>/dev/null || true); do san="$san,IP:$ip"; done
    [ -n "${DOCKER_TLS_SAN:-}" ] && san="$san,$DOCKER_TLS_SAN"
    generate "$certs/server" "$(hostname)" "subjectAltName = $san
extendedKeyUsage = serverAuth"
    generate "$certs/client" client "extendedKeyUsage = clientAuth"
    umask 022
    chmod 0755 "$certs" "$certs/client"
    # the client runs as a non-root user: its files are readable (only the workers mount this volume)
    chmod 0644 "$certs/client/key.pem" "$certs/client/cert.pem" "$certs/client/ca.pem"
  fi
  set -- --host=unix:///var/run/docker.sock --host=tcp://0.0.0.0:2376 --tlsverify \
    --tlscacert "$certs/server/ca.pem" --tlscert "$certs/server/cert.pem" --tlskey "$certs/server/key.pem" "$@"
else
  set -- --host=unix:///var/run/docker.sock "$@"
fi

# dockerd inside a container: securityfs for AppArmor, and a tmpfs /tmp of its own
mountpoint -q /sys/kernel/security 2>/dev/null || mount -t securityfs none /sys/kernel/security 2>/dev/null || true
mountpoint -q /tmp 2>/dev/null || mount -t tmpfs none /tmp
exec dockerd "$@"
