"""Shopping cart totals."""

from dataclasses import dataclass, field

TAX_RATE = 0.2


@dataclass
class Cart:
    items: dict[str, tuple[int, float]] = field(default_factory=dict)

    def add(self, sku: str, quantity: int, unit_price: float) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        count, _ = self.items.get(sku, (0, unit_price))
        self.items[sku] = (count + quantity, unit_price)

    def subtotal(self) -> float:
        return sum(count * price for count, price in self.items.values())

    def total(self) -> float:
        return round(self.subtotal() * (1 + TAX_RATE), 2)
