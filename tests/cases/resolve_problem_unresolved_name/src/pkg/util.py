def helper(x):
    return x + undefined_constant
