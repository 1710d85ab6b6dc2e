import pytest

from cart.pricing import add_tax, apply_discount


def test_zero_discount_keeps_total():
    assert apply_discount(50.0, 0) == 50.0


def test_invalid_discount_rejected():
    with pytest.raises(ValueError):
        apply_discount(10.0, 120)


def test_tax():
    assert add_tax(100.0, 20) == 120.0
