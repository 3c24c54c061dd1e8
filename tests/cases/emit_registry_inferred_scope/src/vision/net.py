from vision.registry import MODELS


@MODELS.register_module()
class Net:
    def __init__(self, op=dict(type="Scale", factor=3)):
        self.op = MODELS.build(op)
        self.scope = MODELS.scope
        self.parent_scope = MODELS.parent.scope
