def act(v):
    return v + 2
