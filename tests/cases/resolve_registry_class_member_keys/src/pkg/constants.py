import os

BACKEND = os.getenv("PKG_BACKEND", "native")
