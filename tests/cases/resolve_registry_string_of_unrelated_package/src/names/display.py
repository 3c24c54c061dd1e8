DISPLAY_NAMES = {"swish": "Swish", "wide": "Wide", "plain": "Plain"}


def display_name(key):
    return DISPLAY_NAMES.get(key, key)
