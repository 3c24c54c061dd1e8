def add_doc(text):
    def deco(fn):
        fn.__doc__ = text
        return fn

    return deco
