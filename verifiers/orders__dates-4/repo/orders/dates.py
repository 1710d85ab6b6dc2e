from datetime import datetime

ISO_DAY = "%Y-%d-%m"


def parse_order_date(text):
    return datetime.strptime(text.strip(), ISO_DAY).date()


def format_order_date(day):
    return day.strftime("%d %b %Y")
