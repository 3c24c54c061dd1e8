def conv():
    return None
