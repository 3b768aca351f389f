"""Hidden checks: nesting, deletes inside transactions, counts across layers."""

import unittest

from kvstore import NoTransaction, TransactionalStore


class HiddenStoreTest(unittest.TestCase):
    def test_nested_rollback_only_undoes_the_innermost(self):
        s = TransactionalStore()
        s.set("a", 1)
        s.begin()
        s.set("a", 2)
        s.begin()
        s.set("a", 3)
        self.assertEqual(s.depth, 2)
        s.rollback()
        self.assertEqual((s.get("a"), s.depth), (2, 1))
        s.rollback()
        self.assertEqual((s.get("a"), s.depth), (1, 0))

    def test_inner_commit_is_undone_by_outer_rollback(self):
        s = TransactionalStore()
        s.begin()
        s.set("x", "v")
        s.begin()
        s.delete("x")
        s.set("y", "w")
        s.commit()
        self.assertEqual((s.get("x", "gone"), s.get("y")), ("gone", "w"))
        s.rollback()
        self.assertEqual((s.get("x", "gone"), s.get("y", "gone")), ("gone", "gone"))

    def test_delete_inside_a_transaction_and_rollback_restores(self):
        s = TransactionalStore()
        s.set("k", 5)
        s.begin()
        self.assertTrue(s.delete("k"))
        self.assertFalse(s.delete("k"))
        self.assertEqual(s.count(5), 0)
        s.rollback()
        self.assertEqual((s.get("k"), s.count(5)), (5, 1))

    def test_count_sees_every_layer_and_falsy_values(self):
        s = TransactionalStore()
        s.set("a", 0)
        s.set("b", None)
        s.begin()
        s.set("c", 0)
        s.set("a", 1)
        self.assertEqual((s.count(0), s.count(1), s.count(None)), (1, 1, 1))
        self.assertEqual(s.get("b", "default"), None)
        s.commit()
        self.assertEqual(s.depth, 0)
        with self.assertRaises(NoTransaction):
            s.commit()

    def test_stores_are_independent(self):
        first, second = TransactionalStore(), TransactionalStore()
        first.set("a", 1)
        self.assertIsNone(second.get("a"))
