import numpy as np

from pkg import is_flax_available

if is_flax_available():
    import jax.numpy as jnp


def to_numpy(x):
    if is_flax_available() and isinstance(x, jnp.ndarray):
        return np.asarray(x)
    return x
