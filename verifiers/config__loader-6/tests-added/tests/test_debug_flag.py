import pytest

from config.loader import load_settings


@pytest.mark.parametrize("value", ["true", "True", "1", "yes", "Yes"])
def test_truthy(value):
    assert load_settings({"APP_DEBUG": value}).debug is True


@pytest.mark.parametrize("value", ["false", "0", "no", ""])
def test_falsy(value):
    assert load_settings({"APP_DEBUG": value}).debug is False
