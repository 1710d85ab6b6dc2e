from datetime import date

from orders.dates import parse_order_date


def test_day_and_month():
    assert parse_order_date("2024-03-07") == date(2024, 3, 7)


def test_end_of_year():
    assert parse_order_date("2024-12-31") == date(2024, 12, 31)
