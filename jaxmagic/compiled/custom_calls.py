"""What a ``custom-call`` of the optimized HLO runs, named: a Pallas kernel by its own name, a
library's routine by its target and the library it belongs to.

A custom call is XLA handing a piece of work to code it did not generate: a kernel written with
Pallas (Mosaic on a TPU, Triton or Mosaic GPU on a GPU), a library routine (cuBLAS, cuDNN, LAPACK,
oneDNN, DUCC's FFT) or one of the backend's own helpers. Its ``custom_call_target`` says which; a
Pallas kernel's name is in its ``backend_config``: on a GPU as ``"name"``, on a TPU inside the
Mosaic module it carries (MLIR bytecode, base64), whose string table holds the kernel function's
name beside the qualified name JAX recorded for it (``record_pallas.<locals>.add_kernel``).

>>> called('custom_call_target="__cublas$gemm", backend_config={}')
CustomCall(target='__cublas$gemm', name='', library='cuBLAS')
>>> called('custom_call_target="__gpu$xla.gpu.triton", backend_config={"name":"add_kernel"}')
CustomCall(target='__gpu$xla.gpu.triton', name='add_kernel', library='Pallas (Triton)')
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

_TARGET = re.compile(r'\bcustom_call_target="((?:[^"\\]|\\.)*)"')
_BACKEND = re.compile(r"\bbackend_config=(\{.*\})(?:, [a-z_]+=|\s*$)")
_BODY = re.compile(r'"body":"([A-Za-z0-9+/=]+)"')
_NAMED = re.compile(rb"([\x21-\x7e]{2,})\x00")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")

# target (or its start) -> the library or kernel language behind it
LIBRARIES = (
    ("tpu_custom_call", "Pallas (Mosaic TPU)"),
    ("__gpu$xla.gpu.triton", "Pallas (Triton)"),
    ("mosaic_gpu", "Pallas (Mosaic GPU)"),
    ("__cublas", "cuBLAS"),
    ("__cudnn", "cuDNN"),
    ("cusolver", "cuSOLVER"),
    ("cu_lu_pivots", "cuSOLVER"),
    ("cublas", "cuBLAS"),
    ("hipblas", "hipBLAS"),
    ("hipsolver", "hipSOLVER"),
    ("__onednn", "oneDNN"),
    ("lapack_", "LAPACK"),
    ("ducc_fft", "DUCC (FFT)"),
    ("xla_ffi_python", "a Python callback"),
    ("xla_python", "a Python callback"),
)


@dataclass(frozen=True)
class CustomCall:
    """A custom call's ``target``, the kernel's own ``name`` when it has one (a Pallas kernel),
    and the ``library`` it belongs to ("" for the backend's own helpers)."""

    target: str
    name: str
    library: str


def called(attributes: str) -> CustomCall:
    """What the custom call whose attributes (the text after its operands) are given runs."""
    found = _TARGET.search(attributes)
    target = found.group(1) if found else ""
    library = next((name for start, name in LIBRARIES if target.startswith(start)), "")
    return CustomCall(target, _kernel_name(attributes, target), library)


def _kernel_name(attributes: str, target: str) -> str:
    config = _BACKEND.search(attributes)
    if config is None:
        return ""
    try:
        parsed = json.loads(config.group(1))
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for key in ("name", "kernel_name"):
            if isinstance(parsed.get(key), str) and parsed[key]:
                return parsed[key]
    if target == "tpu_custom_call":
        body = _BODY.search(config.group(1))
        return mosaic_kernel_name(body.group(1)) if body else ""
    return ""


def mosaic_kernel_name(body: str) -> str:
    """The kernel function's name in a Mosaic module (base64 MLIR bytecode): the string of its
    string table that another one names qualified (``f.<locals>.add_kernel`` for ``add_kernel``);
    "" where none is.

    >>> mosaic_kernel_name(base64.b64encode(b"ML\\xefR\\x00mod\\x00run.<locals>.add_kernel\\x00add_kernel\\x00").decode())
    'add_kernel'
    """
    try:
        data = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return ""
    if not data.startswith(b"ML\xefR"):
        return ""
    strings = [s.decode("ascii") for s in _NAMED.findall(data)]
    qualified = [s for s in strings if "." in s]
    for candidate in strings:
        if _IDENTIFIER.match(candidate) and any(q.endswith("." + candidate) for q in qualified):
            return candidate
    return ""
