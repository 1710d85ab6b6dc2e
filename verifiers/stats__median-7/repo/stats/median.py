def median(values):
    """Median of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("median of empty data")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
