from timm.layers import Mlp as TimmMlp
from timm.layers.mlp import Mlp as MlpDirect

a = TimmMlp(4)
b = MlpDirect(4)
