"""Vendored blocks that mend themselves: three-way merges, ``check --fix``, import codemods."""
