from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    quantity: int


def low_stock(items, threshold):
    """SKUs whose quantity is at or below the threshold."""
    return [item.sku for item in items if item.quantity < threshold]


def total_units(items):
    return sum(item.quantity for item in items)
