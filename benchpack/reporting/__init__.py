"""Results shown to people: one document, rendered for a terminal or as Markdown.

`document` holds the building blocks (headings, paragraphs, bullet lists,
tables) and their two renderings: rich tables that fit the terminal (100
columns is the width the tables are designed for) and Markdown for files
and pull requests. `benchpack.reporting.report` builds the compare/report documents;
`run_summary` the per-case table at the end of `benchpack run`.
"""
