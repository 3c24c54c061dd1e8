"""The static check of block files (the pre-commit hook's engine)."""
