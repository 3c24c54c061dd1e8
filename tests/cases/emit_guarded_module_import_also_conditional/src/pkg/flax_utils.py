import jax
import jax.numpy as jnp
from flax.serialization import from_bytes


def load_flax(x):
    state = from_bytes(None, x)
    return jax.tree_util.tree_map(lambda v: v.dtype == jnp.bfloat16, state)
