"""Imported only inside a function: its fallback import chain runs only then."""

import os

try:
    import tf_keras_absent as keras
except ImportError:
    import keras_absent as keras

    if keras.version > 2:
        raise ValueError("keras 3 is not supported")

BACKEND = keras.backend
os.environ.setdefault("KERAS_BACKEND_FLAG", "1")


def load_keras_weights(model, path):
    return keras.load(path, BACKEND)
