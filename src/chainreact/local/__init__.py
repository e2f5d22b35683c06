"""The embedded local model: llama.cpp's OpenAI-compatible server running a GGUF shipped in a wheel.

Everything heavy (llama_cpp, the model file) is only touched inside functions, so importing this package
is cheap and works without the `local` extra; the extra is checked when a server is actually needed.
"""

from .server import (
    DEFAULT_MODEL_NAME,
    LOCAL_URL_ENV,
    LocalEndpoint,
    LocalServer,
    find_model_path,
    get_local_endpoint,
    local_extra_available,
    stop_local,
    stop_local_sync,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "LOCAL_URL_ENV",
    "LocalEndpoint",
    "LocalServer",
    "find_model_path",
    "get_local_endpoint",
    "local_extra_available",
    "stop_local",
    "stop_local_sync",
]
