import pytest
from shop.cart import Cart
from shop.discounts import UnknownDiscountCode, apply_discount


def test_apply_discount_percentage():
    assert apply_discount(100.0, "welcome10") == 90.0


def test_cart_total_applies_discount_before_tax():
    cart = Cart()
    cart.add("apple", 4, 2.5)
    cart.apply_code("SPRING25")
    assert cart.total() == 9.0


def test_unknown_code_is_rejected():
    with pytest.raises(UnknownDiscountCode):
        Cart().apply_code("FREE100")
