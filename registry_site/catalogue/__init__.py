"""The public catalogue's read side and state changes, shared by the pages and the API.

- `leaderboard`: the denormalized `LeaderboardEntry` rows and every ranking query.
- `transitions`: withdraw / unpublish / flag, with events and entries in one transaction.
"""
