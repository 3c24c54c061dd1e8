def relu(x):
    return x.clamp(min=0)
