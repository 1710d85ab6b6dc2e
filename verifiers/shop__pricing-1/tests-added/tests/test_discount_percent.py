from cart.pricing import apply_discount


def test_percentage_discount():
    assert apply_discount(200.0, 10) == 180.0


def test_full_discount():
    assert apply_discount(80.0, 100) == 0.0
