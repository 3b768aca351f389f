"""Hidden checks for complete-kvstore, evaluated in the candidate's sandboxed process
and judged by the verifier (verifykit.check_hidden). Never copied into the workspace.

The shipped tests' cases, nesting, deletes inside transactions, counts across
layers, and the realistic wrong fixes seen in practice: an undo log that
records a key twice in one transaction (the second entry overwrites the
first, so rollback restores an intermediate value) and `delete` of a key
whose value is None (it exists, so the answer is True).
"""

from verifykit import Probe, Raises

SETUP = "from kvstore import NoTransaction, TransactionalStore\nS = TransactionalStore"
NO_TX = Raises("kvstore.store.NoTransaction")


def steps(*lines):
    return "s = S()\n" + "\n".join(lines)


PROBES = [
    # the shipped tests' cases
    Probe("set-get-delete", steps("s.set('a', 1)", "result = (s.get('a'), s.delete('a'), s.get('a'), s.delete('a'))"),
          (1, True, None, False)),  # fmt: skip
    Probe("rollback-undoes", steps("s.set('a', 1)", "s.begin()", "s.set('a', 2)", "s.set('b', 3)", "inside = s.get('a')",
                                   "s.rollback()", "result = (inside, s.get('a'), s.get('b'), s.depth)"), (2, 1, None, 0)),  # fmt: skip
    Probe("commit-keeps", steps("s.begin()", "s.set('a', 1)", "s.commit()", "result = (s.get('a'), s.depth)"), (1, 0)),
    Probe("count", steps("s.set('a', 10)", "s.set('b', 10)", "result = s.count(10)"), 2),
    Probe("rollback-without-transaction", steps("s.rollback()"), NO_TX),
    Probe("commit-without-transaction", steps("s.commit()"), NO_TX),
    Probe("no-transaction-is-a-runtime-error", "issubclass(NoTransaction, RuntimeError)", True),
    # nesting
    Probe("nested-rollback-innermost-only", steps(
        "s.set('a', 1)", "s.begin()", "s.set('a', 2)", "s.begin()", "s.set('a', 3)", "d = s.depth", "s.rollback()",
        "mid = (s.get('a'), s.depth)", "s.rollback()", "result = (d, mid, (s.get('a'), s.depth))"), (2, (2, 1), (1, 0))),  # fmt: skip
    Probe("inner-commit-undone-by-outer-rollback", steps(
        "s.begin()", "s.set('x', 'v')", "s.begin()", "s.delete('x')", "s.set('y', 'w')", "s.commit()",
        "mid = (s.get('x', 'gone'), s.get('y'))", "s.rollback()", "result = (mid, s.get('x', 'gone'), s.get('y', 'gone'))"),
        (("gone", "w"), "gone", "gone")),  # fmt: skip
    Probe("delete-inside-transaction-and-rollback", steps(
        "s.set('k', 5)", "s.begin()", "first = s.delete('k')", "second = s.delete('k')", "c = s.count(5)", "s.rollback()",
        "result = (first, second, c, s.get('k'), s.count(5))"), (True, False, 0, 5, 1)),  # fmt: skip
    Probe("count-sees-every-layer-and-falsy-values", steps(
        "s.set('a', 0)", "s.set('b', None)", "s.begin()", "s.set('c', 0)", "s.set('a', 1)",
        "result = (s.count(0), s.count(1), s.count(None), s.get('b', 'default'))"), (1, 1, 1, None)),  # fmt: skip
    Probe("commit-closes-and-then-raises", steps("s.begin()", "s.commit()", "d = s.depth", "s.commit()"), NO_TX),
    Probe("stores-are-independent", "a, b = S(), S()\na.set('a', 1)\nresult = (b.get('a'), b.depth, b.count(1))", (None, 0, 0)),
    # a key written twice in one transaction
    Probe("set-twice-then-rollback", steps("s.set('a', 1)", "s.begin()", "s.set('a', 2)", "s.set('a', 3)", "s.rollback()",
                                          "result = (s.get('a'), s.count(2), s.count(3))"), (1, 0, 0)),  # fmt: skip
    Probe("new-key-twice-then-rollback", steps("s.begin()", "s.set('n', 1)", "s.set('n', 2)", "s.rollback()",
                                              "result = (s.get('n', 'gone'), s.delete('n'))"), ("gone", False)),  # fmt: skip
    Probe("delete-then-set-then-rollback", steps("s.set('a', 1)", "s.begin()", "s.delete('a')", "s.set('a', 9)", "s.rollback()",
                                                "result = s.get('a')"), 1),  # fmt: skip
    Probe("set-twice-across-nested-commit", steps(
        "s.set('a', 1)", "s.begin()", "s.set('a', 2)", "s.begin()", "s.set('a', 3)", "s.commit()", "s.set('a', 4)",
        "s.rollback()", "result = (s.get('a'), s.depth)"), (1, 0)),  # fmt: skip
    # None is a value
    Probe("delete-key-whose-value-is-none", steps("s.set('k', None)", "result = (s.delete('k'), s.delete('k'), s.get('k', 'gone'))"),
          (True, False, "gone")),  # fmt: skip
    Probe("delete-none-value-inside-transaction", steps("s.set('k', None)", "s.begin()", "gone = s.delete('k')", "s.rollback()",
                                                       "result = (gone, s.get('k', 'missing'), s.count(None))"), (True, None, 1)),  # fmt: skip
    Probe("count-after-commit-into-outer", steps("s.begin()", "s.set('a', 7)", "s.begin()", "s.set('b', 7)", "s.commit()",
                                                "inner = s.count(7)", "s.commit()", "result = (inner, s.count(7), s.depth)"), (2, 2, 0)),  # fmt: skip
    Probe("long-run-against-a-model", steps(
        "import random", "rng = random.Random(5)", "model = [{}]", "trace = []",
        "for i in range(400):",
        "    op = rng.choice('ssdbrc')",
        "    key = rng.choice('abcd')",
        "    if op == 's':",
        "        v = rng.choice([0, 1, None, 'x']); s.set(key, v); model[-1][key] = v",
        "    elif op == 'd':",
        "        trace.append(s.delete(key))",
        "    elif op == 'b':",
        "        s.begin()",
        "    elif op == 'r' and s.depth:",
        "        s.rollback()",
        "    elif op == 'c' and s.depth:",
        "        s.commit()",
        "    trace.append((s.depth, tuple(s.get(k, '-') for k in 'abcd'), s.count(None)))",
        "result = trace[-60:]"), None),  # replaced below by the reference run  # fmt: skip
]


class _Reference:
    """The documented semantics, straightforwardly: a stack of full snapshots."""

    def __init__(self):
        self.stack = [{}]

    def get(self, key, default=None):
        return self.stack[-1].get(key, default)

    def set(self, key, value):
        self.stack[-1][key] = value

    def delete(self, key):
        return self.stack[-1].pop(key, _MISSING) is not _MISSING

    def count(self, value):
        return sum(1 for v in self.stack[-1].values() if v == value)

    def begin(self):
        self.stack.append(dict(self.stack[-1]))

    def rollback(self):
        self.stack.pop()

    def commit(self):
        top = self.stack.pop()
        self.stack[-1] = top

    @property
    def depth(self):
        return len(self.stack) - 1


_MISSING = object()


def _expected_long_run():
    namespace = {"S": _Reference}
    exec(PROBES[-1].code, namespace)
    return namespace["result"]


PROBES[-1] = Probe(PROBES[-1].id, PROBES[-1].code, _expected_long_run())


class _Reference:
    """The documented semantics (README), here only: the oracle for drawn sequences."""

    def __init__(self):
        self.data, self.undo = {}, []

    def set(self, key, value):
        if self.undo and key not in self.undo[-1]:
            self.undo[-1][key] = self.data.get(key, _MISSING)
        self.data[key] = value

    def delete(self, key):
        if key not in self.data:
            return False
        if self.undo and key not in self.undo[-1]:
            self.undo[-1][key] = self.data[key]
        del self.data[key]
        return True

    def begin(self):
        self.undo.append({})

    def rollback(self):
        for key, old in self.undo.pop().items():
            if old is _MISSING:
                self.data.pop(key, None)
            else:
                self.data[key] = old

    def commit(self):  # the innermost transaction only; an outer rollback still undoes it
        top = self.undo.pop()
        if self.undo:
            for key, old in top.items():
                self.undo[-1].setdefault(key, old)


_MISSING = object()


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution: 12 sequences of 10–40 operations over keys a–e and values
    {None, 0, 1, 2, 'x'}: set 40%, delete 20%, begin 15%, rollback/commit 10%
    each when a transaction is open, count 5%. Each probe checks every answer
    *and* the store's state after the sequence (every key, depth, counts)."""
    probes = []
    for index in range(12):
        ref, lines, answers = _Reference(), ["s = S()", "out = []"], []
        for _ in range(rng.randint(10, 40)):
            roll, key, value = rng.random(), rng.choice("abcde"), rng.choice([None, 0, 1, 2, "x"])
            if roll < 0.4:
                ref.set(key, value)
                lines.append(f"s.set({key!r}, {value!r})")
            elif roll < 0.6:
                answers.append(ref.delete(key))
                lines.append(f"out.append(s.delete({key!r}))")
            elif roll < 0.75:
                ref.begin()
                lines.append("s.begin()")
            elif roll < 0.95 and ref.undo:
                getattr(ref, "rollback" if roll < 0.85 else "commit")()
                lines.append("s.rollback()" if roll < 0.85 else "s.commit()")
            else:
                answers.append(sum(1 for v in ref.data.values() if v == value))
                lines.append(f"out.append(s.count({value!r}))")
        state = ([ref.data.get(k, "<absent>") for k in "abcde"], len(ref.undo))
        lines.append("result = (out, ([s.get(k, '<absent>') for k in 'abcde'], s.depth))")
        probes.append(Probe(f"drawn-sequence-{index}", "\n".join(lines), (answers, state)))
    return probes
