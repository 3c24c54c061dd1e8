def act(v):
    return v + 1
