import random
import unittest

from pyfuncs.intervals import merge_intervals


class HiddenIntervalsTest(unittest.TestCase):
    def test_touching_intervals_merge(self):
        self.assertEqual(merge_intervals([(3, 5), (1, 3)]), [(1, 5)])

    def test_adjacent_but_not_touching_stay_apart(self):
        self.assertEqual(merge_intervals([(1, 2), (3, 4)]), [(1, 2), (3, 4)])

    def test_contained_and_point_intervals(self):
        self.assertEqual(merge_intervals([(1, 10), (2, 3), (10, 10), (12, 12)]), [(1, 10), (12, 12)])

    def test_input_not_modified_and_bad_interval_rejected(self):
        data = [(5, 6), (1, 2)]
        merge_intervals(data)
        self.assertEqual(data, [(5, 6), (1, 2)])
        with self.assertRaises(ValueError):
            merge_intervals([(3, 1)])

    def test_random_against_brute_force(self):
        rng = random.Random(3)
        for _ in range(300):
            intervals = [(s, s + rng.randrange(0, 5)) for s in (rng.randrange(-20, 20) for _ in range(rng.randrange(0, 8)))]
            merged = merge_intervals(intervals)
            points = {p for s, e in intervals for p in range(s, e + 1)}
            self.assertEqual({p for s, e in merged for p in range(s, e + 1)}, points)
            for (s1, e1), (s2, e2) in zip(merged, merged[1:]):
                self.assertLess(e1, s2)
