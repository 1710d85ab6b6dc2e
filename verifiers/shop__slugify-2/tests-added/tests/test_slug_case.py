from shop.text import slugify


def test_lowercase():
    assert slugify("Blue Mug") == "blue-mug"


def test_punctuation_and_digits():
    assert slugify("  Tea & Cake 2 ") == "tea-cake-2"
