"""Percentage discount codes, validated against the catalogue of known codes."""

CODES = {"WELCOME10": 10, "SPRING25": 25}


class UnknownDiscountCode(ValueError):
    """Raised when a discount code is not in the catalogue."""


def discount_percent(code: str) -> int:
    """Return the percentage for a known discount code."""
    try:
        return CODES[code.strip().upper()]
    except KeyError:
        raise UnknownDiscountCode(code) from None


def apply_discount(amount: float, code: str) -> float:
    """Apply a percentage discount code to an amount before tax."""
    return round(amount * (100 - discount_percent(code)) / 100, 2)
