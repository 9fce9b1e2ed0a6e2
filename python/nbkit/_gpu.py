"""GPU arrays (CuPy arrays, PyTorch CUDA tensors) in and out (not public)."""
from __future__ import annotations

from typing import Any, Callable, Optional


def is_gpu_array(x: Any) -> bool:
    return hasattr(x, "__cuda_array_interface__") or (type(x).__module__.startswith("torch") and
                                                     getattr(x, "is_cuda", False))


class Framework:
    """How to make, copy and wait for arrays of the library a GPU input came from, so that
    results come back as the same kind of array on the same device."""

    def __init__(self, x: Any) -> None:
        root = type(x).__module__.split(".")[0]
        self.name = root
        if root == "cupy":
            import cupy
            self._cupy, self.device = cupy, x.device.id
        elif root == "torch":
            import torch
            self._torch, self.device = torch, x.device
        else:
            raise TypeError(f"GPU arrays from CuPy or PyTorch are taken; got {type(x).__module__}.{type(x).__name__} "
                            "(convert it with cupy.asarray)")

    def prepare(self, x: Any) -> Any:
        """x as an array of this framework on its device (numpy inputs moved there; tensors
        that require grad detached: the sums have no gradient)."""
        if self.name == "cupy":
            with self._cupy.cuda.Device(self.device):
                return self._cupy.asarray(x)
        t = x if isinstance(x, self._torch.Tensor) else self._torch.as_tensor(x)
        return t.detach().to(self.device)

    def allocate(self, shape: tuple) -> Any:
        if self.name == "cupy":
            with self._cupy.cuda.Device(self.device):
                return self._cupy.empty(shape, dtype=self._cupy.float64)
        return self._torch.empty(shape, dtype=self._torch.float64, device=self.device)

    def to_host(self, x: Any) -> Any:
        if x is None:
            return None
        if self.name == "cupy":
            return self._cupy.asnumpy(x)
        return x.detach().cpu().numpy()

    def synchronize(self) -> None:
        """Waits for the framework's queued work (the inputs' producers, and uses of the memory
        the results will take) before nbkit's own streams touch them."""
        if self.name == "cupy":
            with self._cupy.cuda.Device(self.device):
                self._cupy.cuda.get_current_stream().synchronize()
        else:
            self._torch.cuda.current_stream(self.device).synchronize()


def framework_of(*arrays: Any) -> Optional[Framework]:
    """The framework of the first GPU array among `arrays`, or None when all are host arrays."""
    for x in arrays:
        if x is not None and is_gpu_array(x):
            return Framework(x)
    return None


Allocate = Callable[[tuple], Any]
