from engine.registry import MODELS as ROOT
from engine.registry import Registry

MODELS = Registry("model", parent=ROOT, scope="det")
