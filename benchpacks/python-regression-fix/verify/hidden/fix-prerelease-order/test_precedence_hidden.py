"""Hidden checks: the full semver 2.0.0 precedence chain and the reported symptoms."""

import random
import unittest

from versionkit import Specifier, Version, latest

# semver.org section 11, in ascending order, plus numeric edge cases
CHAIN = [
    "1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
    "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-rc.9", "1.0.0-rc.10",
    "1.0.0-rc.10.1", "1.0.0-rc.100", "1.0.0-rc.12345678901234567890", "1.0.0-rc1", "1.0.0",
    "1.0.1-0", "1.0.1", "1.10.0",
]


class HiddenPrecedenceTest(unittest.TestCase):
    def test_the_whole_chain_is_strictly_ascending(self):
        versions = [Version.parse(v) for v in CHAIN]
        for low, high in zip(versions, versions[1:]):
            with self.subTest(low=str(low), high=str(high)):
                self.assertLess(low, high)
                self.assertGreater(high, low)
                self.assertNotEqual(low, high)

    def test_sorting_shuffled_input_restores_the_chain(self):
        shuffled = CHAIN[:]
        random.Random(7).shuffle(shuffled)
        self.assertEqual([str(v) for v in sorted(Version.parse(v) for v in shuffled)], CHAIN)

    def test_the_reported_symptoms_are_gone(self):
        self.assertEqual(str(latest(["1.0.0-rc.2", "1.0.0-rc.10"], include_prereleases=True)), "1.0.0-rc.10")
        self.assertEqual(str(latest(["2.1.0-beta.3", "2.1.0-beta.12", "2.1.0-beta.9"], include_prereleases=True)),
                         "2.1.0-beta.12")
        self.assertTrue(Specifier.parse(">=1.0.0-rc.3").contains("1.0.0-rc.10"))
        self.assertFalse(Specifier.parse("<3.0.0-alpha.7").contains("3.0.0-alpha.20", include_prereleases=True))

    def test_equal_versions_still_hash_alike_and_ignore_build(self):
        self.assertEqual(Version.parse("1.0.0-rc.10+x"), Version.parse("1.0.0-rc.10+y"))
        self.assertEqual(hash(Version.parse("1.0.0-rc.10+x")), hash(Version.parse("1.0.0-rc.10+y")))
        self.assertLessEqual(Version.parse("1.0.0-rc.10"), Version.parse("1.0.0-rc.10"))
