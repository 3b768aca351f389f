"""Hidden checks: the split is right for totals the prompt never showed."""

import itertools
import unittest

from pricing import split_bill


class HiddenSplitBillTest(unittest.TestCase):
    def test_every_cent_is_kept_and_largest_shares_come_first(self):
        for total, people in itertools.product((0, 1, 2, 99, 100, 101, 1001, 12345), range(1, 9)):
            shares = split_bill(total, people)
            with self.subTest(total=total, people=people):
                self.assertEqual(len(shares), people)
                self.assertEqual(sum(shares), total)
                self.assertLessEqual(max(shares) - min(shares), 1)
                self.assertEqual(shares, sorted(shares, reverse=True))

    def test_known_values(self):
        self.assertEqual(split_bill(1001, 4), [251, 250, 250, 250])
        self.assertEqual(split_bill(2, 3), [1, 1, 0])

    def test_still_rejects_bad_input(self):
        with self.assertRaises(ValueError):
            split_bill(100, 0)
        with self.assertRaises(ValueError):
            split_bill(-1, 2)
