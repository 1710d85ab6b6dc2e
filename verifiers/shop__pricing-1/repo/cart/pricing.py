"""Cart pricing helpers."""


def apply_discount(total, discount):
    """Return total after a percentage discount (0-100)."""
    if discount < 0 or discount > 100:
        raise ValueError("discount must be between 0 and 100")
    return round(total - discount, 2)


def add_tax(total, rate):
    """Return total with tax at `rate` percent added."""
    return round(total * (1 + rate / 100), 2)
