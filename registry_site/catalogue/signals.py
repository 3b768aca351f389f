"""What the catalogue announces, for apps above it to act on without the catalogue importing them.

`run_status_changed` is sent inside the transaction of every public-status change of a
published run (withdraw, unpublish, republish, flag, unflag), after the change is
made and the leaderboard rows are rewritten. The submissions app records it in the
submission's audit trail and re-decides the badges that run's reproductions decided
(`submissions.receivers`). Receivers run in the same transaction: one that raises
rolls the change back.
"""

from django.dispatch import Signal

# kwargs: run (PublishedRun), actor (user), from_state, to_state, reason (str)
run_status_changed = Signal()
