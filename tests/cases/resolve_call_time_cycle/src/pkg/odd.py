from .even import is_even


def is_odd(n):
    return False if n == 0 else is_even(n - 1)
