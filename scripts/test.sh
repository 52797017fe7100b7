#!/usr/bin/env bash
# Set everything up (idempotently) and run the whole test suite against real services.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export LOGOMESH_TEST_REDIS_URL=${LOGOMESH_TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
export LOGOMESH_TEST_DATABASE_URL=${LOGOMESH_TEST_DATABASE_URL:-postgresql+asyncpg://logomesh:logomesh@127.0.0.1:5432/logomesh}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# the two tests that build the deployment images (tests/deploy: the compose review, the Dockerfile build) take
# minutes with the build cache warm and about half an hour cold: they run only when the caller sets this to 1
export LOGOMESH_DEPLOY_BUILD_TESTS=${LOGOMESH_DEPLOY_BUILD_TESTS:-0}
export LOGOMESH_REQUIRE_BROWSER=1  # setup.sh installed chromium and cmark-gfm: their tests must not skip
exec .venv/bin/python -m pytest "$@"
