"""Benchpack: versioned LLM benchmark packs, a trustworthy runner, and a results registry."""

__version__ = "0.1.0"
