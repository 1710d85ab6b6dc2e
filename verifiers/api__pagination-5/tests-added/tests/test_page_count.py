from api.pagination import page_count


def test_partial_last_page():
    assert page_count(45, 20) == 3


def test_no_items():
    assert page_count(0, 20) == 0
