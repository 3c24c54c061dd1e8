def is_flax_available():
    return False
