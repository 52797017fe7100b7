"""A tiny shop: carts and their totals."""
