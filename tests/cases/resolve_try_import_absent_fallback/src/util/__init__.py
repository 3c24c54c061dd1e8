def helper(value):
    return value * 2
