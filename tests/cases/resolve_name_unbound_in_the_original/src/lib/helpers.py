def clip(values):
    return values.clamp(-1, 1)
