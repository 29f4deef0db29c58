"""Piper's own runtime (piper-tts) as a peer for voxmill's accuracy tier: speaks sentences with a voice and reports,
for each, the phonemes and phoneme ids piper-tts chose and the audio it made, with timings for benchmarks.

    <peers venv>/bin/python scripts/peers/piper_peer.py OUT_DIR < request.json
    <peers venv>/bin/python scripts/peers/piper_peer.py --serve      (benchmarks: see below)

request.json: {"model": "/abs/voice.onnx", "sentences": ["...", ...],
               "noise_scale": 0, "noise_w": 0, "length_scale": 1,   (null or absent: the voice config's value)
               "normalize": false,   (piper-tts's peak normalisation per sentence; its own default is true)
               "warmup": true,       (speak the first sentence once before timing, so espeak-ng's data load and
                                      ONNX Runtime's first run are not counted in the first sentence)
               "threads": null,      (ONNX Runtime intra-op threads; null or absent: piper-tts's own session options,
                                      ONNX Runtime's default of one thread per physical core. A number: voxmill's
                                      session options, that many intra-op threads, one inter-op thread, sequential
                                      execution, all graph optimizations, so benchmarks compare like with like)
               "phoneme_ids": [[[1, 0, ...], ...], ...]}   (optional: per sentence, per chunk, ids chosen elsewhere;
                                      each is also spoken as given, so the runtimes compare on the same ids even
                                      where the phonemizers disagree)

Audio goes to OUT_DIR/<sentence>-<chunk>.f32 (float32, little-endian, mono, the voice's rate): one file per sentence
piper-tts made of the input (espeak-ng may split one input into several); audio from given ids goes to
OUT_DIR/ids-<sentence>-<chunk>.f32. stdout carries one JSON document:
{"piper_tts", "espeak_ng", "onnxruntime", "sample_rate", "threads", "load_ms", "warmup_ms", "max_rss_kb",
 "sentences": [{"text", "synth_ms", "first_chunk_ms", "chunks": [{"phonemes", "phoneme_ids", "audio", "samples"}],
                "ids_synth_ms", "ids_chunks": [{"audio", "samples"}]}]}
load_ms times PiperVoice.load; first_chunk_ms is the time until PiperVoice.synthesize's generator yields the
sentence's first chunk (its time to first audio); max_rss_kb is the process's peak RSS (ru_maxrss) once everything
above is done, before the report is written.

--serve: one JSON document per line each way, so a benchmark can interleave this process with others step by step.
The first line is a request as above without "sentences", "warmup" and "phoneme_ids"; the voice is loaded and the
answer is {"piper_tts", "espeak_ng", "onnxruntime", "sample_rate", "threads", "load_ms"}. Then each {"text": "..."}
is spoken (no audio written) and answered {"synth_ms", "first_chunk_ms", "chunks": [{"samples", "phoneme_ids"}]}
(phoneme_ids: how many); {"exit": true} or the end of input is answered {"max_rss_kb"}, and the process ends.
"""

import json
import os
import re
import resource
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


def session_options(threads: int) -> onnxruntime.SessionOptions:
    """voxmill's session options (src/tts/synth-worker.ts) with `threads` intra-op threads."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def load_voice(model: str, threads) -> PiperVoice:
    """PiperVoice.load, with the given session options when threads is set (load takes none of its own, so the
    SessionOptions it constructs are swapped for ours while it runs)."""
    if threads is None:
        return PiperVoice.load(model)
    options = session_options(int(threads))
    original = onnxruntime.SessionOptions
    onnxruntime.SessionOptions = lambda: options
    try:
        return PiperVoice.load(model)
    finally:
        onnxruntime.SessionOptions = original


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


def synthesis_config(request: dict) -> SynthesisConfig:
    return SynthesisConfig(
        noise_scale=request.get("noise_scale"),
        noise_w_scale=request.get("noise_w"),
        length_scale=request.get("length_scale"),
        normalize_audio=bool(request.get("normalize", False)),
    )


def timed_synthesis(voice: PiperVoice, text: str, config: SynthesisConfig):
    """The chunks of PiperVoice.synthesize, the time of the whole iteration and the time until its first chunk."""
    started = time.perf_counter()
    # The generator phonemizes and runs the model lazily: time the whole iteration, nothing else inside it.
    chunks = []
    first_chunk_ms = None
    for chunk in voice.synthesize(text, syn_config=config):
        if first_chunk_ms is None:
            first_chunk_ms = (time.perf_counter() - started) * 1000
        chunks.append(chunk)
    return chunks, (time.perf_counter() - started) * 1000, first_chunk_ms


def describe(voice: PiperVoice, threads) -> dict:
    return {
        "piper_tts": version("piper-tts"),
        "espeak_ng": espeak_ng_version(),
        "onnxruntime": onnxruntime.__version__,
        "sample_rate": voice.config.sample_rate,
        # piper-tts leaves ONNX Runtime's intra-op threads at its default (one per physical core) unless the
        # request set them.
        "threads": (
            voice.session.get_session_options().intra_op_num_threads if threads is not None else os.cpu_count()
        ),
    }


def max_rss_kb() -> int:
    # Linux reports ru_maxrss in kB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def answer(document: dict) -> None:
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


def serve() -> int:
    """The --serve mode (see the module docstring)."""
    request = json.loads(sys.stdin.readline())
    threads = request.get("threads")
    started = time.perf_counter()
    voice = load_voice(request["model"], threads)
    load_ms = (time.perf_counter() - started) * 1000
    config = synthesis_config(request)
    answer({**describe(voice, threads), "load_ms": load_ms})
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        if command.get("exit"):
            break
        chunks, synth_ms, first_chunk_ms = timed_synthesis(voice, command["text"], config)
        answer(
            {
                "synth_ms": synth_ms,
                "first_chunk_ms": first_chunk_ms,
                "chunks": [
                    {"samples": int(chunk.audio_float_array.shape[0]), "phoneme_ids": len(chunk.phoneme_ids)}
                    for chunk in chunks
                ],
            }
        )
    answer({"max_rss_kb": max_rss_kb()})
    return 0


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--serve":
        return serve()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    request = json.load(sys.stdin)

    threads = request.get("threads")
    started = time.perf_counter()
    voice = load_voice(request["model"], threads)
    load_ms = (time.perf_counter() - started) * 1000

    config = synthesis_config(request)
    sentences = request["sentences"]

    warmup_ms = 0.0
    if request.get("warmup", True) and sentences:
        started = time.perf_counter()
        for _ in voice.synthesize(sentences[0], syn_config=config):
            pass
        warmup_ms = (time.perf_counter() - started) * 1000

    results = []
    for index, text in enumerate(sentences):
        chunks, synth_ms, first_chunk_ms = timed_synthesis(voice, text, config)
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
        result = {"text": text, "synth_ms": synth_ms, "first_chunk_ms": first_chunk_ms, "chunks": described}
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
            **describe(voice, threads),
            "load_ms": load_ms,
            "warmup_ms": warmup_ms,
            "max_rss_kb": max_rss_kb(),
            "sentences": results,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
