from inventory.stock import Item, low_stock


def test_threshold_is_inclusive():
    assert low_stock([Item("a", 1), Item("b", 5), Item("c", 6)], 5) == ["a", "b"]
