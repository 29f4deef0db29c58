"""The converters' common end: read the checkpoint, build and check the graph, and write it so that a model that fails
its check never sits at the output path.

Shared by the converters in this directory (`convert`): the model is saved beside the output as `<out>.partial`, checked there
(onnxruntime against a numpy forward pass, or against the original code's outputs), and only then renamed into place;
whatever happens (a failed check exits with SystemExit), the partial file does not stay behind.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def write_checked(
    model: Any, out: Path, check: Callable[[Path], object] | None, name: str, started: float
) -> int:
    """Saves `model`, runs `check` on the saved file, then moves it to `out`. Returns the process exit code."""
    import onnx

    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    try:
        try:
            onnx.save_model(model, str(partial))
        except OSError as e:
            print(f"{name}: cannot write {out}: {e}", file=sys.stderr)
            return 1
        if check is not None:
            check(partial)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    elapsed = time.perf_counter() - started
    print(f"wrote {out} ({out.stat().st_size} bytes) in {elapsed:.2f} s")
    return 0


def convert(
    name: str,
    checkpoint: Path,
    weights_of: Callable[[Any], Any],
    build_model: Callable[[Any], Any],
    out: Path,
    check_of: Callable[[Any], Callable[[Path], object] | None],
    extra_globals: Mapping[tuple[str, str], Any] | None = None,
) -> int:
    """Reads `checkpoint`, picks the weights (`weights_of`), builds and checks the ONNX graph, and writes it to `out`
    after `check_of(weights)` (None: no check) passed on the saved file. Returns the process exit code."""
    import pickle

    from torch_checkpoint import CheckpointError, load_checkpoint

    try:
        import onnx
    except ImportError as e:
        print(f"{name}: the onnx package is required: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        weights = weights_of(load_checkpoint(checkpoint, extra_globals))
    except (CheckpointError, pickle.UnpicklingError, OSError) as e:
        print(f"{name}: {checkpoint}: {e}", file=sys.stderr)
        return 1
    model = build_model(weights)
    onnx.checker.check_model(model, full_check=True)
    return write_checked(model, out, check_of(weights), name, started)
