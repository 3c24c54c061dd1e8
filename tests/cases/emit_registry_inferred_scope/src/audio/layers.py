from audio.registry import MODELS


@MODELS.register_module()
class Gain:
    def __init__(self, gain=0.5):
        self.gain = gain
