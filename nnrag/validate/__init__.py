"""Validation: stages, the sandbox, the result cache and probing."""
