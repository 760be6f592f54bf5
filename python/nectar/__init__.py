"""nectar: Qwen3 decoders and ModernBERT-family encoders in C, from Python.

    import nectar
    m = nectar.Model("models/demo")            # backend="cpu", threads=..., ctx=...
    print(m.generate("In the beginning", 32))  # sampling as generation_config.json says
    m.create_chat_completion([{"role": "user", "content": "Hi"}])  # OpenAI-shaped dicts
    for piece in m.stream("Once", 32, temperature=0.7, seed=1):
        print(piece, end="", flush=True)

ctypes bindings over libnectar (include/nectar.h); errors raise NectarError
with the library's one-line message.
"""

from ._lib import LIB as _LIB
from .decision import Decision
from .model import Model, NectarError, compile, set_bf16_contract

__version__ = _LIB.nc_version().decode()
__all__ = ["Decision", "Model", "NectarError", "compile", "set_bf16_contract", "__version__"]
