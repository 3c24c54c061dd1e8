"""Fetching sources: local paths, git checkouts and PyPI distributions."""
