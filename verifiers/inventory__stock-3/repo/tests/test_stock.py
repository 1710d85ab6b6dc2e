from inventory.stock import Item, low_stock, total_units


def test_below_threshold():
    assert low_stock([Item("a", 1), Item("b", 9)], 5) == ["a"]


def test_total_units():
    assert total_units([Item("a", 1), Item("b", 9)]) == 10
