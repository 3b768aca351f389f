"""Server-rendered public pages, one module per page (docs/leaderboards.md, "Pages")."""
