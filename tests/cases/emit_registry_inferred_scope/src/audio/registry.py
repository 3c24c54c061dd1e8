from core.models import MODELS as CORE_MODELS
from core.registry import Registry

MODELS = Registry("model", parent=CORE_MODELS, locations=["audio.layers"])
