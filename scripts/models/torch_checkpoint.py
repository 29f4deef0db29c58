"""Read a torch.save checkpoint into numpy arrays, without torch.

torch.save writes either the zip format (torch >= 1.6: <prefix>/data.pkl plus one raw file per
storage under <prefix>/data/<key>) or the legacy format: five pickles in a row (magic number,
protocol version 1001, sys info, the object whose storages are persistent ids, the list of storage
keys), then for each key in that order an int64 element count and the raw little-endian bytes.
Both are read with a restricted Unpickler that resolves only collections.OrderedDict,
torch._utils._rebuild_tensor(_v2), torch._utils._rebuild_parameter and the torch.<Type>Storage
classes, and turns every tensor into a numpy array. Anything else in the pickle is refused, so a
checkpoint cannot run code. Shared by the converters in this directory.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

# torch.<Name>Storage -> numpy dtype of the raw little-endian bytes on disk.
STORAGE_DTYPES: dict[str, str] = {
    "FloatStorage": "<f4",
    "DoubleStorage": "<f8",
    "HalfStorage": "<f2",
    "BFloat16Storage": "<u2",  # widened to float32 by _to_float32
    "LongStorage": "<i8",
    "IntStorage": "<i4",
    "ShortStorage": "<i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


class CheckpointError(Exception):
    """The checkpoint cannot be read or is not the expected model."""


class StorageType:
    """Stand-in for a torch.<Name>Storage class named in the pickle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = np.dtype(STORAGE_DTYPES[name])


class Storage:
    """A flat storage: filled from the file once its bytes are known."""

    def __init__(
        self,
        storage_type: StorageType,
        numel: int,
        root: Storage | None = None,
        view_offset: int = 0,
    ) -> None:
        self.storage_type = storage_type
        self.numel = numel
        self.data: np.ndarray | None = None
        # Legacy (pre-1.0) storage views: a slice of a root storage.
        self.root = root
        self.view_offset = view_offset


class LazyTensor:
    """A tensor view on a storage; materialised after the storage bytes are read."""

    def __init__(
        self,
        storage: Storage,
        offset: int,
        size: tuple[int, ...],
        stride: tuple[int, ...],
    ) -> None:
        self.storage = storage
        self.offset = offset
        self.size = tuple(size)
        self.stride = tuple(stride)

    def materialise(self) -> np.ndarray:
        data = self.storage.data
        if data is None:
            raise CheckpointError("a tensor refers to a storage whose bytes were never read")
        if any(s == 0 for s in self.size):
            return np.zeros(self.size, dtype=data.dtype)
        # as_strided checks nothing: negative strides would read before the buffer, so only the forms torch writes.
        if any(s < 0 for s in self.stride) or any(n < 0 for n in self.size):
            raise CheckpointError(f"tensor {self.size} with strides {self.stride} is not one torch writes")
        last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride, strict=True))
        if self.offset < 0 or last >= data.size:
            raise CheckpointError(
                f"tensor {self.size} at offset {self.offset} runs past its storage "
                f"of {data.size} elements"
            )
        item = data.itemsize
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :],
            shape=self.size,
            strides=tuple(s * item for s in self.stride),
            writeable=False,
        )
        return np.ascontiguousarray(view)


def _rebuild_tensor_v2(
    storage: Storage,
    storage_offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
    requires_grad: bool = False,
    backward_hooks: Any = None,
    metadata: Any = None,
) -> LazyTensor:
    return LazyTensor(storage, storage_offset, size, stride)


def _rebuild_tensor(
    storage: Storage,
    storage_offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
) -> LazyTensor:
    return LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(
    data: LazyTensor, requires_grad: bool = False, backward_hooks: Any = None
) -> LazyTensor:
    return data


ALLOWED_GLOBALS: dict[tuple[str, str], Callable[..., Any]] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles a torch checkpoint into numpy-backed stand-ins; refuses anything else."""

    def __init__(
        self,
        file: io.BufferedIOBase,
        storages: dict[str, Storage],
        extra_globals: Mapping[tuple[str, str], Any] | None = None,
    ) -> None:
        super().__init__(file)
        self.storages = storages
        self.extra_globals = extra_globals or {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(name)
        found = ALLOWED_GLOBALS.get((module, name)) or self.extra_globals.get((module, name))
        if found is None:
            raise CheckpointError(f"refusing to unpickle global {module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid:
            raise CheckpointError(f"unexpected persistent id {pid!r}")
        kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if kind != "storage":
            raise CheckpointError(f"unsupported persistent id kind {kind!r}")
        storage_type, key, _location, numel = pid[1:5]
        view_metadata = pid[5] if len(pid) > 5 else None
        if not isinstance(storage_type, StorageType):
            raise CheckpointError(f"unsupported storage type {storage_type!r}")
        key = str(key)
        storage = self.storages.get(key)
        if storage is None:
            storage = Storage(storage_type, int(numel))
            self.storages[key] = storage
        if view_metadata is not None:
            # Legacy (pre-1.0) storage views: (view_key, offset, size) into the root storage.
            _view_key, view_offset, view_size = view_metadata
            return Storage(storage_type, int(view_size), storage, int(view_offset))
        return storage


def _to_float32(array: np.ndarray, storage_type: StorageType) -> np.ndarray:
    if storage_type.name == "BFloat16Storage":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _resolve_views(obj: Any) -> None:
    """Point legacy storage views at their slice of the root storage."""
    if isinstance(obj, LazyTensor):
        storage = obj.storage
        root = storage.root
        if root is not None and storage.data is None and root.data is not None:
            start = storage.view_offset
            storage.data = root.data[start : start + storage.numel]
    elif isinstance(obj, dict):
        for value in obj.values():
            _resolve_views(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _resolve_views(value)


def _materialise(obj: Any) -> Any:
    if isinstance(obj, LazyTensor):
        array = obj.materialise()
        return _to_float32(array, obj.storage.storage_type)
    if isinstance(obj, dict):
        return type(obj)((k, _materialise(v)) for k, v in obj.items())
    if isinstance(obj, list):
        return [_materialise(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_materialise(v) for v in obj)
    return obj


def _load_legacy(f: io.BufferedIOBase, extra_globals: Mapping[tuple[str, str], Any]) -> Any:
    # Every one of the five pickles goes through the restricted unpickler: the header ones hold only ints, a dict and
    # a list, so an empty allow-list reads them, and a hostile file cannot run code from any of them.
    storages: dict[str, Storage] = {}

    def plain() -> Any:
        return RestrictedUnpickler(f, storages).load()

    try:
        magic = plain()
    except CheckpointError:
        raise
    except Exception as e:  # any other failure here means "not a legacy checkpoint"
        raise CheckpointError(f"not a torch checkpoint (neither zip nor legacy pickle): {e}") from e
    if magic != LEGACY_MAGIC:
        raise CheckpointError("not a torch checkpoint: wrong legacy magic number")
    protocol = plain()
    if protocol != LEGACY_PROTOCOL:
        raise CheckpointError(f"unsupported legacy protocol version {protocol}")
    sys_info = plain()
    if not isinstance(sys_info, dict) or not sys_info.get("little_endian", True):
        raise CheckpointError("big-endian (or unreadable) legacy checkpoints are not supported")
    result = RestrictedUnpickler(f, storages, extra_globals).load()
    keys = plain()
    if not isinstance(keys, list):
        raise CheckpointError("the legacy checkpoint's storage key list is not a list")
    for key in keys:
        storage = storages.get(str(key))
        if storage is None:
            raise CheckpointError(f"storage {key} listed but never referenced")
        (numel,) = struct.unpack("<q", f.read(8))
        if numel != storage.numel:
            raise CheckpointError(
                f"storage {key}: {numel} elements on disk, {storage.numel} in the pickle"
            )
        nbytes = numel * storage.storage_type.dtype.itemsize
        raw = f.read(nbytes)
        if len(raw) != nbytes:
            raise CheckpointError(f"storage {key}: file truncated ({len(raw)} of {nbytes} bytes)")
        storage.data = np.frombuffer(raw, dtype=storage.storage_type.dtype)
    _resolve_views(result)
    return result


def _load_zip(path: Path, extra_globals: Mapping[tuple[str, str], Any]) -> Any:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkl) != 1:
            raise CheckpointError(f"zip checkpoint without a single data.pkl: {names[:10]}")
        prefix = pkl[0][: -len("data.pkl")]
        byteorder_name = prefix + "byteorder"
        if byteorder_name in names and z.read(byteorder_name).strip() != b"little":
            raise CheckpointError("big-endian zip checkpoints are not supported")
        storages: dict[str, Storage] = {}
        with z.open(pkl[0]) as f:
            result = RestrictedUnpickler(io.BytesIO(f.read()), storages, extra_globals).load()
        for key, storage in storages.items():
            member = f"{prefix}data/{key}"
            if member not in names:
                raise CheckpointError(f"storage {member} is missing from the zip")
            raw = z.read(member)
            dtype = storage.storage_type.dtype
            if len(raw) < storage.numel * dtype.itemsize:
                raise CheckpointError(
                    f"storage {member} is shorter than its {storage.numel} elements"
                )
            storage.data = np.frombuffer(raw, dtype=dtype, count=storage.numel)
    return result


def load_checkpoint(path: Path, extra_globals: Mapping[tuple[str, str], Any] | None = None) -> Any:
    """Load a torch.save file into plain Python containers holding numpy arrays.

    extra_globals: (module, name) -> an inert stand-in, for a checkpoint whose metadata pickles classes of its own
    (pyannote's task specifications); everything else outside the allowed list is still refused.
    """
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint: {path}")
    try:
        if zipfile.is_zipfile(path):
            result = _load_zip(path, extra_globals or {})
        else:
            with path.open("rb") as f:
                result = _load_legacy(f, extra_globals or {})
        return _materialise(result)
    except (ValueError, TypeError, KeyError, IndexError, struct.error, EOFError, pickle.UnpicklingError) as e:
        # A malformed file is a CheckpointError with its reason, not a traceback.
        raise CheckpointError(f"malformed checkpoint: {type(e).__name__}: {e}") from e
