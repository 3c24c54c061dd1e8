"""Retrieval: search, de-duplication, categories and code features."""
