#!/usr/bin/env python3
"""Convert Resemblyzer's GE2E speaker encoder (pretrained.pt) to ONNX, without torch.

Source: the PyPI wheel Resemblyzer==0.1.4 (Apache-2.0; the licence text is
Resemblyzer-0.1.4.dist-info/LICENSE inside the wheel), file resemblyzer/pretrained.pt
(17 MB: model weights plus Adam optimizer state).

    python scripts/models/ge2e-to-onnx.py --checkpoint pretrained.pt --out ge2e.onnx [--verify]

Run it with the peers venv (scripts/peers-setup.sh): it needs numpy and onnx; --verify also
needs onnxruntime (there through faster-whisper).

Reading the checkpoint
----------------------
pretrained.pt is torch.save's legacy (pre-zip) format; torch_checkpoint.py reads it (and the zip
format) into numpy arrays with a restricted Unpickler that refuses anything but tensors and dicts.

Model (resemblyzer/voice_encoder.py, hparams.py)
------------------------------------------------
    nn.LSTM(40, 256, num_layers=3, batch_first=True) -> hidden[-1] (final h of layer 3)
    -> nn.Linear(256, 256) -> ReLU -> x / ||x||_2
similarity_weight and similarity_bias (GE2E training-loss scalars) are not part of the encoder.
PyTorch's LSTM gate blocks are [i, f, g, o]; ONNX's are [i, o, f, c]: the blocks are reordered.
ONNX graph (opset 17): input `mels` float32 [batch, frames, 40], output `embedding` float32
[batch, 256]. The only departure from torch: the norm is clamped to >= 1e-12, so an all-zero ReLU
output gives a zero vector where torch gives NaN.

Feature pipeline the encoder expects (resemblyzer/audio.py, hparams.py), for the TypeScript side
------------------------------------------------------------------------------------------------
1. Audio: mono float32 in [-1, 1], resampled to 16 kHz (librosa.resample, soxr_hq by default).
2. normalize_volume(wav, -30 dBFS, increase_only=True):
       rms = sqrt(mean((wav * 32767)^2)); dBFS = 20 * log10(rms / 32767)
       if dBFS < -30: wav *= 10 ** ((-30 - dBFS) / 20)      (louder audio is left alone)
3. trim_long_silences(wav) (webrtcvad):
       window = 30 ms = 480 samples; wav is cut to a multiple of 480;
       pcm16 = int16(round(wav * 32767)) (numpy's cast: no clipping);
       flags[k] = webrtcvad.Vad(mode=3).is_speech(pcm16 window k, 16000);
       moving average of width 8, zero padded: pad 3 zeros before, 4 after,
       mask[k] = round(mean(flags[k-3 .. k+4])) (numpy round: 0.5 -> 0, so >= 5 of 8 voiced);
       binary dilation of the mask by a 7-wide structuring element (k-3 .. k+3);
       keep only the samples of windows whose mask is set.
4. wav_to_mel_spectrogram(wav) = librosa.feature.melspectrogram(y=wav, sr=16000, n_fft=400,
   hop_length=160, n_mels=40), everything else librosa's defaults, i.e.:
       win_length = n_fft = 400 (25 ms), window = periodic Hann (scipy hann(400, sym=False)),
       center=True: the signal is padded by n_fft // 2 = 200 samples on each side, with zeros in
       librosa >= 0.10 (pad_mode="constant"); librosa 0.9.x padded by reflection,
       frame t covers padded[160 t : 160 t + 400]; n_frames = 1 + len(wav) // 160,
       power spectrum |rfft(frame * window)|^2 (power=2.0, 201 bins),
       mel filterbank: librosa.filters.mel(sr=16000, n_fft=400, n_mels=40, fmin=0, fmax=8000,
       htk=False, norm="slaney"): Slaney mel scale (linear 3 * f / 200 below 1 kHz,
       15 + 27 * ln(f / 1000) / ln(6.4) above), 42 points evenly spaced in mel from 0 to
       mel(8000), triangular filters over FFT bin frequencies k * 16000 / 400, each scaled by
       2 / (f[m+2] - f[m]) (Slaney area normalisation),
       NO log, NO dB: the encoder takes the linear power mel energies,
       transposed to [frames, 40], float32.
5. embed_utterance(wav, rate=1.3, min_coverage=0.75):
       frame_step = round(16000 / 1.3 / 160) = 77 frames; n_frames = ceil((len(wav) + 1) / 160);
       partial windows of 160 frames (1.6 s) starting at 0, 77, 154, ... while
       start < max(1, n_frames - 160 + 77 + 1);
       the last window is dropped if (len(wav) - 160 * start) / 25600 < 0.75 and it is not the
       only one; the wav is zero-padded to the last window's end (160 * (start + 160) samples)
       BEFORE the mel spectrogram is computed, so padded windows see zeros (not reflected audio);
       each window's mel slice [start, start + 160) goes through the encoder; the utterance
       embedding is the mean of the partial embeddings, L2-normalised again.
       The overlap is therefore 83 of 160 frames (about 52 %), not exactly 50 %.
A numpy re-implementation of step 4 (np.fft.rfft, the filterbank built from the formulas above)
matched librosa 0.10.2.post1 on jfk.wav to 8e-8 of the largest mel value.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from onnx_output import convert
from torch_checkpoint import CheckpointError

N_MELS = 40
HIDDEN = 256
EMBEDDING = 256
LAYERS = 3
OPSET = 17

def encoder_weights(checkpoint: Any) -> dict[str, np.ndarray]:
    """Pick the encoder's tensors out of the checkpoint and check their shapes."""
    state = checkpoint.get("model_state", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise CheckpointError("checkpoint holds no state dict (expected a 'model_state' dict)")
    expected: dict[str, tuple[int, ...]] = {
        "linear.weight": (EMBEDDING, HIDDEN),
        "linear.bias": (EMBEDDING,),
    }
    for layer in range(LAYERS):
        expected[f"lstm.weight_ih_l{layer}"] = (4 * HIDDEN, N_MELS if layer == 0 else HIDDEN)
        expected[f"lstm.weight_hh_l{layer}"] = (4 * HIDDEN, HIDDEN)
        expected[f"lstm.bias_ih_l{layer}"] = (4 * HIDDEN,)
        expected[f"lstm.bias_hh_l{layer}"] = (4 * HIDDEN,)
    weights: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        if name not in state:
            raise CheckpointError(f"state dict lacks {name}; keys: {sorted(state)}")
        array = np.asarray(state[name])
        if array.shape != shape:
            raise CheckpointError(f"{name} has shape {array.shape}, expected {shape}")
        if not np.all(np.isfinite(array)):
            raise CheckpointError(f"{name} holds non-finite values")
        weights[name] = array.astype(np.float32)
    return weights


def _torch_to_onnx_gates(w: np.ndarray) -> np.ndarray:
    """Reorder the gate blocks along axis 0 from PyTorch's [i, f, g, o] to ONNX's [i, o, f, c]."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def build_model(weights: dict[str, np.ndarray]) -> Any:
    """Build the ONNX encoder graph."""
    from onnx import TensorProto, helper, numpy_helper

    initializers = []
    nodes = [
        # ONNX Runtime's LSTM kernels take [seq, batch, input] only (layout=0).
        helper.make_node("Transpose", ["mels"], ["x0"], perm=[1, 0, 2], name="to_time_major"),
    ]
    axes0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0")
    axes1 = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes1")
    initializers += [axes0, axes1]
    layer_input = "x0"
    for layer in range(LAYERS):
        w = _torch_to_onnx_gates(weights[f"lstm.weight_ih_l{layer}"])[None]
        r = _torch_to_onnx_gates(weights[f"lstm.weight_hh_l{layer}"])[None]
        b = np.concatenate(
            [
                _torch_to_onnx_gates(weights[f"lstm.bias_ih_l{layer}"]),
                _torch_to_onnx_gates(weights[f"lstm.bias_hh_l{layer}"]),
            ]
        )[None]
        names = [f"lstm{layer}.W", f"lstm{layer}.R", f"lstm{layer}.B"]
        for name, array in zip(names, (w, r, b), strict=True):
            initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        last = layer == LAYERS - 1
        outputs = ["", f"h{layer}"] if last else [f"y{layer}"]
        nodes.append(
            helper.make_node(
                "LSTM", [layer_input, *names], outputs, hidden_size=HIDDEN, name=f"lstm{layer}"
            )
        )
        if not last:
            # Y is [seq, num_directions=1, batch, hidden]: drop the direction axis.
            nodes.append(helper.make_node("Squeeze", [f"y{layer}", "axes1"], [f"x{layer + 1}"]))
            layer_input = f"x{layer + 1}"
    initializers += [
        numpy_helper.from_array(weights["linear.weight"], "linear.weight"),
        numpy_helper.from_array(weights["linear.bias"], "linear.bias"),
        numpy_helper.from_array(np.array(1e-12, dtype=np.float32), "norm_floor"),
    ]
    nodes += [
        # Y_h is [num_directions=1, batch, hidden].
        helper.make_node("Squeeze", [f"h{LAYERS - 1}", "axes0"], ["hidden"]),
        helper.make_node("Gemm", ["hidden", "linear.weight", "linear.bias"], ["linear"], transB=1),
        helper.make_node("Relu", ["linear"], ["raw"]),
        # Before opset 18, ReduceL2 takes its axes as an attribute.
        helper.make_node("ReduceL2", ["raw"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Max", ["norm", "norm_floor"], ["norm_safe"]),
        helper.make_node("Div", ["raw", "norm_safe"], ["embedding"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ge2e_speaker_encoder",
        [helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["batch", "frames", N_MELS])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", EMBEDDING])],
        initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="voxmill ge2e-to-onnx",
        doc_string=(
            "Resemblyzer 0.1.4 GE2E voice encoder (Apache-2.0). Input: 40-channel linear power "
            "mel spectrogram frames (16 kHz, n_fft 400, hop 160, Slaney mel), 160 frames per "
            "partial utterance. Output: L2-normalised 256-d embedding."
        ),
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10
    return model


def reference_forward(weights: dict[str, np.ndarray], mels: np.ndarray) -> np.ndarray:
    """The encoder in plain numpy (float64), PyTorch gate order, straight from the checkpoint."""

    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    x = mels.astype(np.float64)
    batch, frames, _ = x.shape
    h = np.zeros((batch, HIDDEN))
    for layer in range(LAYERS):
        w_ih = weights[f"lstm.weight_ih_l{layer}"].astype(np.float64)
        w_hh = weights[f"lstm.weight_hh_l{layer}"].astype(np.float64)
        bias = (weights[f"lstm.bias_ih_l{layer}"] + weights[f"lstm.bias_hh_l{layer}"]).astype(
            np.float64
        )
        pre = x @ w_ih.T + bias
        h = np.zeros((batch, HIDDEN))
        c = np.zeros((batch, HIDDEN))
        out = np.empty((batch, frames, HIDDEN))
        for t in range(frames):
            gates = pre[:, t] + h @ w_hh.T
            i, f, g, o = np.split(gates, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            out[:, t] = h
        x = out
    raw = np.maximum(h @ weights["linear.weight"].T.astype(np.float64) + weights["linear.bias"], 0)
    norm = np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
    return (raw / norm).astype(np.float32)


def verify(weights: dict[str, np.ndarray], onnx_path: Path, tolerance: float) -> float:
    """Run the ONNX file with onnxruntime and compare it with the numpy reference."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise SystemExit(f"--verify needs onnxruntime in this Python: {e}") from e
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    worst = 0.0
    # Random power-mel-like inputs (non-negative, heavy-tailed) and plain gaussian ones.
    cases = [
        np.abs(rng.standard_normal((3, 160, N_MELS))).astype(np.float32) ** 2,
        rng.standard_normal((2, 37, N_MELS)).astype(np.float32),
        rng.random((1, 1, N_MELS)).astype(np.float32),
    ]
    for mels in cases:
        got = session.run(["embedding"], {"mels": mels})[0]
        want = reference_forward(weights, mels)
        diff = float(np.max(np.abs(got - want)))
        print(f"verify: mels {list(mels.shape)}: max |onnxruntime - numpy| = {diff:.3g}")
        worst = max(worst, diff)
    if worst > tolerance:
        raise SystemExit(f"verify: FAILED, max diff {worst:.3g} > tolerance {tolerance:g}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert Resemblyzer's GE2E pretrained.pt to ONNX without torch."
    )
    parser.add_argument("--checkpoint", required=True, type=Path, help="resemblyzer pretrained.pt")
    parser.add_argument("--out", required=True, type=Path, help="the .onnx file to write")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="compare onnxruntime's output with a numpy forward pass on random input",
    )
    parser.add_argument("--tolerance", type=float, default=1e-5, help="--verify's max abs diff")
    args = parser.parse_args(argv)
    return convert(
        "ge2e-to-onnx",
        args.checkpoint,
        encoder_weights,
        build_model,
        args.out,
        lambda weights: (lambda path: verify(weights, path, args.tolerance)) if args.verify else None,
        None,
    )

if __name__ == "__main__":
    sys.exit(main())
