from engine.registry import Registry
from engine.root import MODELS as ENGINE_MODELS

MODELS = Registry("model", parent=ENGINE_MODELS, scope="det", locations=["det.losses"])
