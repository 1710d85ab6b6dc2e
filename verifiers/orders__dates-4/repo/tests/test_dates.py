from datetime import date

from orders.dates import format_order_date, parse_order_date


def test_format():
    assert format_order_date(date(2024, 3, 7)) == "07 Mar 2024"


def test_parse_new_year():
    assert parse_order_date(" 2024-01-01 ") == date(2024, 1, 1)
