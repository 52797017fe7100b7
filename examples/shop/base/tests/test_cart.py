import pytest
from shop.cart import Cart


def test_total_includes_tax():
    cart = Cart()
    cart.add("apple", 2, 1.5)
    assert cart.total() == 3.6


def test_rejects_non_positive_quantity():
    with pytest.raises(ValueError):
        Cart().add("apple", 0, 1.0)
