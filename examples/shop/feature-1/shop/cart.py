"""Shopping cart totals."""

from dataclasses import dataclass, field

from shop.discounts import apply_discount

TAX_RATE = 0.2


@dataclass
class Cart:
    items: dict[str, tuple[int, float]] = field(default_factory=dict)
    discount_code: str | None = None

    def add(self, sku: str, quantity: int, unit_price: float) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        count, _ = self.items.get(sku, (0, unit_price))
        self.items[sku] = (count + quantity, unit_price)

    def subtotal(self) -> float:
        return sum(count * price for count, price in self.items.values())

    def apply_code(self, code: str) -> None:
        apply_discount(0.0, code)  # validates the code now, not at checkout
        self.discount_code = code

    def total(self) -> float:
        amount = self.subtotal()
        if self.discount_code:
            amount = apply_discount(amount, self.discount_code)
        return round(amount * (1 + TAX_RATE), 2)
