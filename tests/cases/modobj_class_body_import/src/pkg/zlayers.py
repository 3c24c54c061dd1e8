class Conv:
    pass
