def tokens(text):
    from .model import Tokenizer as Split
    from . import model

    return model.count(Split().split(text))
