"""Extraction: the closure of a block and its emission as one standalone file."""
