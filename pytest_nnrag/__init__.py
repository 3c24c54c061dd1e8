"""pytest plugin for nnrag: one test per discovered block."""
