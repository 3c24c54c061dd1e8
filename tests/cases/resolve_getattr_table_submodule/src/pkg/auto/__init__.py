"""A lazy package: its submodules are attributes only once imported."""
