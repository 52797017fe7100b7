#!/usr/bin/env bash
# Set up LogoMesh on a fresh Debian/Ubuntu machine, idempotently:
#   system packages, the Python environment (.venv), and the local services the tests use
#   (Redis, PostgreSQL, the Docker engine and the offline-built sandbox image).
# Usage: scripts/setup.sh [--no-services]
set -euo pipefail
cd "$(dirname "$0")/.."

SERVICES=1
[ "${1:-}" = "--no-services" ] && SERVICES=0

log() { printf 'setup: %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- system packages --------------------------------------------------------------------------------------
# docker-compose: `docker-compose config` validates deploy/compose.yaml in tests/deploy;
# chromium and cmark-gfm: tests render reports and pages as GitHub and a browser show them (tests/browser.py);
# docker-registry: tests/sandbox/test_env_registry.py serves environments from one on loopback
PKGS=(git redis-server postgresql docker.io debootstrap docker-compose chromium cmark-gfm docker-registry)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- Python -------------------------------------------------------------------------------------------------
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || { log "creating .venv"; "$PY" -m venv .venv; }
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch must come first: anything else pulls gigabytes of CUDA packages.
.venv/bin/python -c "import torch" 2>/dev/null || { log "installing torch (CPU)"; .venv/bin/pip install -q torch==2.13.0; }
log "installing logomesh (with tree-sitter and its Go, JavaScript and TypeScript grammars, for their syntax trees)"
.venv/bin/pip install -q -e '.[all,dev]'

# --- services -----------------------------------------------------------------------------------------------
if [ "$SERVICES" = 1 ]; then
  bash scripts/services.sh
  bash scripts/sandbox-image.sh
fi
log "ready"
