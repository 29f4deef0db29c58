"""Piper's own runtime (piper-tts) as a peer for voxmill's accuracy tier: speaks sentences with a voice and reports,
for each, the phonemes and phoneme ids piper-tts chose and the audio it made, with timings for benchmarks.

    <peers venv>/bin/python scripts/peers/piper_peer.py OUT_DIR < request.json

request.json: {"model": "/abs/voice.onnx", "sentences": ["...", ...],
               "noise_scale": 0, "noise_w": 0, "length_scale": 1,   (null or absent: the voice config's value)
               "normalize": false,   (piper-tts's peak normalisation per sentence; its own default is true)
               "warmup": true,       (speak the first sentence once before timing, so espeak-ng's data load and
                                      ONNX Runtime's first run are not counted in the first sentence)
               "phoneme_ids": [[[1, 0, ...], ...], ...]}   (optional: per sentence, per chunk, ids chosen elsewhere;
                                      each is also spoken as given, so the runtimes compare on the same ids even
                                      where the phonemizers disagree)

Audio goes to OUT_DIR/<sentence>-<chunk>.f32 (float32, little-endian, mono, the voice's rate): one file per sentence
piper-tts made of the input (espeak-ng may split one input into several); audio from given ids goes to
OUT_DIR/ids-<sentence>-<chunk>.f32. stdout carries one JSON document:
{"piper_tts", "espeak_ng", "onnxruntime", "sample_rate", "threads", "load_ms", "warmup_ms",
 "sentences": [{"text", "synth_ms", "chunks": [{"phonemes", "phoneme_ids", "audio", "samples"}],
                "ids_synth_ms", "ids_chunks": [{"audio", "samples"}]}]}
"""

import json
import os
import re
import sys
import time
from importlib.metadata import version

import numpy as np
import onnxruntime
from piper import PiperVoice, SynthesisConfig


def finish(audio: np.ndarray, config: SynthesisConfig) -> np.ndarray:
    """What PiperVoice.synthesize does to the model's output, for audio made from given ids."""
    if config.normalize_audio:
        peak = float(np.max(np.abs(audio))) if audio.size else 0.0
        audio = np.zeros_like(audio) if peak < 1e-8 else audio / peak
    return np.clip(audio * config.volume, -1.0, 1.0).astype("<f4")


def espeak_ng_version() -> str:
    """The espeak-ng that piper-tts bundles, as its library names itself (it has no Python-level version)."""
    import piper

    library = os.path.join(os.path.dirname(piper.__file__), "espeakbridge.so")
    try:
        with open(library, "rb") as file:
            data = file.read()
    except OSError:
        return "unknown"
    found = re.search(rb"\b1\.5\d\.\d+(?:\.\d+)?\b", data)
    return found.group(0).decode() if found else "unknown"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    request = json.load(sys.stdin)

    started = time.perf_counter()
    voice = PiperVoice.load(request["model"])
    load_ms = (time.perf_counter() - started) * 1000

    config = SynthesisConfig(
        noise_scale=request.get("noise_scale"),
        noise_w_scale=request.get("noise_w"),
        length_scale=request.get("length_scale"),
        normalize_audio=bool(request.get("normalize", False)),
    )
    sentences = request["sentences"]

    warmup_ms = 0.0
    if request.get("warmup", True) and sentences:
        started = time.perf_counter()
        for _ in voice.synthesize(sentences[0], syn_config=config):
            pass
        warmup_ms = (time.perf_counter() - started) * 1000

    results = []
    for index, text in enumerate(sentences):
        started = time.perf_counter()
        # The generator phonemizes and runs the model lazily: time the whole iteration, nothing else inside it.
        chunks = list(voice.synthesize(text, syn_config=config))
        synth_ms = (time.perf_counter() - started) * 1000
        described = []
        for number, chunk in enumerate(chunks):
            name = f"{index}-{number}.f32"
            audio = np.ascontiguousarray(chunk.audio_float_array, dtype="<f4")
            audio.tofile(os.path.join(out_dir, name))
            described.append(
                {
                    "phonemes": "".join(chunk.phonemes),
                    "phoneme_ids": [int(i) for i in chunk.phoneme_ids],
                    "audio": name,
                    "samples": int(audio.shape[0]),
                }
            )
        result = {"text": text, "synth_ms": synth_ms, "chunks": described}
        given = request.get("phoneme_ids")
        if given is not None:
            started = time.perf_counter()
            audios = [finish(voice.phoneme_ids_to_audio(ids, config), config) for ids in given[index]]
            result["ids_synth_ms"] = (time.perf_counter() - started) * 1000
            result["ids_chunks"] = []
            for number, audio in enumerate(audios):
                name = f"ids-{index}-{number}.f32"
                audio.tofile(os.path.join(out_dir, name))
                result["ids_chunks"].append({"audio": name, "samples": int(audio.shape[0])})
        results.append(result)

    json.dump(
        {
            "piper_tts": version("piper-tts"),
            "espeak_ng": espeak_ng_version(),
            "onnxruntime": onnxruntime.__version__,
            "sample_rate": voice.config.sample_rate,
            # piper-tts leaves ONNX Runtime's intra-op threads at its default (one per physical core).
            "threads": os.cpu_count(),
            "load_ms": load_ms,
            "warmup_ms": warmup_ms,
            "sentences": results,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
