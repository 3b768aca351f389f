import unittest

from pyfuncs.roman import from_roman, to_roman


class HiddenRomanTest(unittest.TestCase):
    def test_round_trip_every_number(self):
        for number in range(1, 4000):
            self.assertEqual(from_roman(to_roman(number)), number)

    def test_known_values(self):
        cases = {1: "I", 9: "IX", 14: "XIV", 40: "XL", 90: "XC", 400: "CD", 944: "CMXLIV", 3999: "MMMCMXCIX"}
        for number, text in cases.items():
            self.assertEqual(to_roman(number), text)

    def test_rejects_out_of_range_and_bools(self):
        for bad in (0, -1, 4000, True):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                to_roman(bad)

    def test_rejects_non_canonical_numerals(self):
        for bad in ("IIII", "IC", "", "mcm", "VV", "XM", "MMMM", "IIV", "ABC"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                from_roman(bad)
