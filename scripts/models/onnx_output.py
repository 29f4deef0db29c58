"""Write a converted ONNX model so that a model that fails its check never sits at the output path.

Shared by the converters in this directory: the model is saved beside the output as `<out>.partial`, checked there
(onnxruntime against a numpy forward pass, or against the original code's outputs), and only then renamed into place;
whatever happens (a failed check exits with SystemExit), the partial file does not stay behind.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
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
