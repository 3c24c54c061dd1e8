def is_even(n):
    from .odd import is_odd

    return True if n == 0 else is_odd(n - 1)
