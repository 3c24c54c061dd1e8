from audio.registry import MODELS as AUDIO_MODELS
from vision.registry import MODELS


@MODELS.register_module()
class Net:
    def __init__(self, op=dict(type="Scale", factor=3)):
        self.op = MODELS.build(op)
        self.gain = AUDIO_MODELS.build(dict(type="Gain"))
        self.scope = MODELS.scope
        self.parent_scope = MODELS.parent.scope
        self.siblings = sorted(AUDIO_MODELS.parent.children)
