from shop.text import slugify, truncate


def test_slug_of_one_word():
    assert slugify("mug") == "mug"


def test_truncate_short():
    assert truncate("tea", 10) == "tea"


def test_truncate_long():
    assert truncate("teapot", 4) == "tea…"
