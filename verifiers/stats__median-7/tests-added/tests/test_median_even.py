import unittest

from stats.median import median


class MedianEvenTests(unittest.TestCase):
    def test_even(self):
        self.assertEqual(median([1, 2, 3, 4]), 2.5)

    def test_two_values(self):
        self.assertEqual(median([5, 1]), 3)
