def parse(text):
    return tuple(int(p) for p in text.split("."))
