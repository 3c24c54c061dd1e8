"""A regular package."""
