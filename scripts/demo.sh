#!/usr/bin/env bash
# Set everything up (idempotently) and review the bundled example pull request with the embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python examples/make_example.py "$work/shop" >/dev/null
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
set +e
.venv/bin/logomesh review "$work/shop" --base main --head feature/discounts \
  --title "Add percentage discount codes to the cart" --body-file examples/shop/PR.md --format "${FORMAT:-markdown}"
code=$?
set -e
[ "$code" -le 1 ] || exit "$code"
