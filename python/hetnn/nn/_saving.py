"""The model file: an .npz archive with the architecture as JSON and one entry per parameter, written atomically
and read back without pickle, every entry checked against the architecture before it is used."""
from __future__ import annotations

import json
import math
import os
import secrets
import zipfile
from typing import Any, Dict, List, Tuple, Union

import numpy as np

from ._layers import LAYERS
from ._losses import LOSSES

FORMAT = "hetnn.nn.Sequential/1"

_MODEL_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _file_mode(path: str) -> int:
    """The mode a file written at `path` should have: the existing file's, else what open() would give (umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:  # the umask without os.umask's set-and-restore race
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = 0o022
    return 0o666 & ~umask


# The architecture is a few KiB of JSON (a 1000-layer model is under 1 MiB); a member inflating to 1.6 GB cost 5 s
# and 1.6 GB of memory before any check.
MAX_ARCHITECTURE_BYTES = 16 << 20


def _npz_headers(path: Union[str, os.PathLike]) -> Dict[str, Tuple[Tuple[int, ...], np.dtype]]:
    """Shape and dtype of every member of an .npz archive, from the .npy headers alone (nothing is loaded). A member
    whose header claims more bytes than it holds (a 100-byte member claiming 4 TB made NumPy allocate them) and an
    architecture beyond MAX_ARCHITECTURE_BYTES are refused here."""
    out: Dict[str, Tuple[Tuple[int, ...], np.dtype]] = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name == "__architecture__" and info.file_size > MAX_ARCHITECTURE_BYTES:
                raise ValueError(f"hetnn.nn.load: {path}: the architecture entry is {info.file_size} bytes (at most "
                                 f"{MAX_ARCHITECTURE_BYTES} are read): not a saved model")
            try:
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                    elif version == (2, 0):
                        shape, _, dtype = np.lib.format.read_array_header_2_0(f)
                    else:
                        raise ValueError(f".npy format version {version}")
                    held = info.file_size - f.tell()
            except Exception as exc:  # a truncated or foreign member: what an interrupted write leaves
                raise ValueError(f"hetnn.nn.load: {path}: entry {name!r} is not a readable .npy array "
                                 f"({type(exc).__name__}: {exc})") from None
            claimed = np.dtype(dtype).itemsize * math.prod(int(d) for d in shape)
            if claimed > held:
                raise ValueError(f"hetnn.nn.load: {path}: entry {name!r} claims shape {tuple(shape)} ({claimed} "
                                 f"bytes) but holds {held}: a damaged or crafted file")
            out[name] = (tuple(shape), np.dtype(dtype))
    return out


def write_model(path: Union[str, os.PathLike], arch: Dict[str, Any], params: List[np.ndarray]) -> None:
    """Writes the architecture and the parameters. A temporary file beside the target is renamed over it once
    complete: a full disk, a quota or Ctrl-C part-way leaves the previous model intact."""
    arrays: Dict[str, Any] = {"__architecture__": np.array(json.dumps(arch))}
    for i, p in enumerate(params):
        arrays[f"param_{i}"] = p
    from .._loader import _core

    # the file a link names, or the path itself; OSError for a directory, a device node, a FIFO, a socket (renaming
    # over one replaces the node: as root, /dev/null)
    target = _core.atomic_target(os.fsdecode(os.fspath(path)))
    # The name first, the file inside the try: a Ctrl-C landing between mkstemp's return and the try left the
    # temporary file behind.
    tmp = os.path.join(os.path.dirname(os.path.abspath(target)),
                       f".{os.path.basename(target)}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.fchmod(fd, _file_mode(target))  # the file's own mode, or what open() would give
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        if not isinstance(exc, FileExistsError):  # O_EXCL: that name is someone else's file
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and exc.errno is not None:  # a full disk, a quota: which file, and why
            raise OSError(exc.errno, f"cannot write {target}: {exc.strerror}") from exc
        raise


def read_model(path: Union[str, os.PathLike]) -> Tuple[str, List[Dict[str, Any]], List[np.ndarray], Any]:
    """(dtype, layer entries, parameter arrays, loss kind or None) of a model file written by :func:`write_model`,
    every entry checked against the architecture from the .npy headers before anything is read; ValueError naming
    the file and what is wrong in it. Nothing is ever unpickled."""
    def bad(what: str) -> ValueError:
        return ValueError(f"hetnn.nn.load: {path}: {what}")

    try:
        headers = _npz_headers(path)
        data = np.load(path, allow_pickle=False)
    except ValueError:
        raise
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"hetnn.nn.load: {path} is not a readable .npz file ({exc})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise bad("a single .npy array, not a saved model (.npz archive)")
    with data:
        if "__architecture__" not in headers:
            raise ValueError(f"hetnn.nn.load: {path} holds no hetnn model (no __architecture__ entry)")
        try:
            text = data["__architecture__"]
            arch = json.loads(str(text))
        except (ValueError, TypeError, RecursionError) as exc:
            raise bad(f"the architecture is not valid JSON ({type(exc).__name__})") from None
        if not isinstance(arch, dict) or arch.get("format") != FORMAT:
            raise bad(f"unknown format {arch.get('format') if isinstance(arch, dict) else type(arch).__name__!r} "
                      f"(expected {FORMAT})")
        dtype = arch.get("dtype", "float32")
        if not isinstance(dtype, str) or dtype not in _MODEL_DTYPES:
            raise bad(f"architecture dtype {dtype!r} is not one of {', '.join(_MODEL_DTYPES)}")
        entries = arch.get("layers")
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("kind"), str) and isinstance(e.get("config"), dict)
                for e in entries):
            raise bad("malformed layer list (expected a list of {kind, config} objects)")
        expected: List[Tuple[int, ...]] = []
        for i, e in enumerate(entries):
            cls = LAYERS.get(e["kind"])
            if cls is None:
                raise bad(f"layer {i}: unknown kind {e['kind']!r} (known: {', '.join(LAYERS)})")
            try:
                expected += cls.param_shapes(e["config"])
            except ValueError as exc:
                raise bad(f"layer {i}: {exc}") from None
        params_in_file = sorted(k for k in headers if k != "__architecture__")
        want_names = [f"param_{i}" for i in range(len(expected))]
        for k in params_in_file:
            if k not in want_names:
                raise bad(f"entry {k!r} is not a parameter of this architecture ({len(expected)} parameters)")
        for k, shape in zip(want_names, expected):
            if k not in headers:
                raise bad(f"missing {k} (shape {shape})")
            got_shape, got_dtype = headers[k]
            if got_shape != shape:
                raise bad(f"{k} has shape {got_shape}, the architecture needs {shape}")
            if got_dtype.kind != "f" and got_dtype.name != "bfloat16":
                raise bad(f"{k} is {got_dtype}, not floating point")
        params = []
        for k in want_names:
            try:
                params.append(data[k])
            except Exception as exc:
                raise bad(f"entry {k!r} cannot be read ({type(exc).__name__}: {exc})") from None
    loss = arch.get("loss")  # the loss the model was fitted with (None: never fitted, or an older file)
    if loss is not None and loss not in LOSSES:
        raise bad(f"unknown loss {loss!r} (known: {', '.join(LOSSES)})")
    return dtype, entries, params, loss
