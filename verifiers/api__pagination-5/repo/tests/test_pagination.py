import pytest

from api.pagination import page_count, page_slice


def test_slice_second_page():
    assert page_slice(list(range(10)), 2, 4) == [4, 5, 6, 7]


def test_per_page_must_be_positive():
    with pytest.raises(ValueError):
        page_count(10, 0)


def test_exact_pages():
    assert page_count(40, 20) == 2
