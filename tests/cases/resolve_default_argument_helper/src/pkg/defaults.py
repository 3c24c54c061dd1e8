def default_dims():
    return (8, 16)


def unused_helper():
    return None
