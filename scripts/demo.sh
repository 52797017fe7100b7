#!/usr/bin/env bash
# Set everything up (idempotently) and review a bundled example pull request with the embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# EXAMPLE=ratelimit reviews the rate limiter without its lock (HEAD=feature/rate-limit-locked: with it)
example=${EXAMPLE:-shop}
case "$example" in
  shop) head=feature/discounts title="Add percentage discount codes to the cart" ;;
  ratelimit) head=${HEAD:-feature/rate-limit} title="Limit each client to 5 requests per minute" ;;
  *) echo "EXAMPLE is shop or ratelimit" >&2; exit 2 ;;
esac
.venv/bin/python examples/make_example.py "$work/$example" "$example" >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
set +e
.venv/bin/logomesh review "$work/$example" --base main --head "$head" \
  --title "$title" --body-file "examples/$example/PR.md" --format "${FORMAT:-markdown}"
code=$?
set -e
[ "$code" -le 1 ] || exit "$code"
