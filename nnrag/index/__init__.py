"""The index: scanning, per-module units, the SQLite store, discovery and symbols."""
