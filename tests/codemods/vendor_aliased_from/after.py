from vendor.blocks.Mlp import Mlp as TimmMlp
from vendor.blocks.Mlp import Mlp as MlpDirect

a = TimmMlp(4)
b = MlpDirect(4)
