"""``import hostdrv.torch_backend`` registers the torch.distributed backend "netrl".

The documented import; the code is :mod:`hostdrv.client.torch_backend`. This module
makes ``hostdrv.torch_backend`` that very module object (not a copy), so its
attributes, and anything a caller sets on them, are the backend's own.
"""

import sys

from hostdrv.client import torch_backend as _backend

sys.modules[__name__] = _backend
