"""faster-whisper (CTranslate2 Whisper, CPU) as a peer for voxmill's accuracy tier: transcribes audio files with the
same weights voxmill runs as ggml, with decoding parameters that mirror voxmill's, and reports text, segments and
words with timings for benchmarks.

    <peers venv>/bin/python scripts/peers/faster_whisper_peer.py < request.json

request.json: {"model": "/abs/ct2-dir", "files": ["/abs/a.wav", ...],
               "compute_type": "float32",      (CTranslate2's; "int8" for the quantized peer)
               "threads": 2,                    (cpu_threads; the model is loaded once with one worker)
               "beam_size": 5, "best_of": 5,    (beam_size 1 = greedy)
               "temperature": 0, "temperature_increment": 0.2,   (0 increment: no fallback)
               "language": "en",                (null: detect, and report what was detected)
               "word_timestamps": true,
               "suppress_non_speech": false,
               "vad_filter": false,             (faster-whisper's Silero VAD filter, its default settings)
               "library_defaults": false,       (true: faster-whisper's own defaults, only language, word
                                                 timestamps and vad_filter set; the other fields are ignored)
               "warmup": true}                  (transcribe the first file once before timing, untimed;
                                                 "all": every file once, in turn: a set's first pass)

stdout carries one JSON document:
{"faster_whisper", "ctranslate2", "compute_type", "threads", "import_ms", "load_ms", "warmup_ms", "warmup_cpu_ms",
 "peak_rss_kb_after_warmup", "peak_rss_kb", "options": {...},
 "results": [{"file", "text", "language", "language_probability", "duration", "transcribe_ms", "cpu_ms",
              "segments": [{"start", "end", "text", "avg_logprob", "no_speech_prob", "temperature",
                            "compression_ratio"}],
              "words": [{"word", "start", "end", "probability"}]}]}

For benchmarks (bench/stt-real.mjs): with "warmup" the first file is transcribed twice, so warmup_ms is a first call
on a fresh model and that file's transcribe_ms the second, warm one (with "all", warmup_ms is a first pass over every
file and the results the second pass); cpu_ms and warmup_cpu_ms are the process's CPU
time (every thread, user + system) during those calls. import_ms is the import of faster_whisper (the
interpreter's own start is before it). peak_rss_kb_after_warmup is the process's VmHWM right after the warm-up (or
after loading, without one), the peak of a process that has loaded and transcribed once; peak_rss_kb is VmHWM at
the end. Both read /proc/self/status (Linux; elsewhere ru_maxrss).

Decoding parameters, against voxmill's defaults (src/stt/request.ts -> native/whisper_model.cc -> whisper.cpp's
whisper_full_params) and whisper-cli's (examples/cli/cli.cpp):
  beam 5, best_of 5          voxmill beamSize 5 (svc-stt-1's default; WhisperModel's is greedy, so the test passes
                             5) and bestOf 5; whisper-cli -bs 5 -bo 5 (its defaults)
  temperatures               voxmill temperature 0 + temperatureIncrement 0.2 -> whisper.cpp tries 0, 0.2, ... 1.0
                             when a window fails its checks; here the same list. Increment 0 -> [temperature]
  fallback checks            log_prob_threshold -1 and no_speech_threshold 0.6 as voxmill's. The third check cannot
                             be the same: whisper.cpp tests the decoded tokens' entropy (< 2.4, only past 32 tokens),
                             faster-whisper the gzip compression ratio (> 2.4). Both catch repetition loops.
  suppress_tokens            [] : voxmill's suppressNonSpeech defaults to false (whisper.cpp's suppress_nst), so
                             non-speech tokens are not suppressed on either side (faster-whisper's own default [-1]
                             would suppress them); with "suppress_non_speech": true, [-1]
  suppress_blank             true on both sides
  previous text              condition_on_previous_text true: whisper.cpp feeds the text of earlier 30 s windows of
                             one call as the prompt (voxmill sets no_context false; whisper-cli's no_context true
                             only clears text left from an earlier call). whisper.cpp never drops that prompt on a
                             hot temperature, so prompt_reset_on_temperature is 1.0 (never) instead of 0.5.
                             Every exact clip is shorter than one window, where none of this applies.
  timestamps                 without_timestamps false, max_initial_timestamp 1.0: both decode timestamp tokens
  length penalty             faster-whisper's length_penalty 1 divides the beam score by the length, as whisper.cpp
                             does with length_penalty -1
  VAD                        off (vad_filter false), as voxmill without `vad`; "vad_filter": true turns it on
"""

import json
import sys
import time
from importlib.metadata import version

_import_started = time.perf_counter()
from faster_whisper import WhisperModel  # noqa: E402  (timed: import_ms)

_import_ms = (time.perf_counter() - _import_started) * 1000


def peak_rss_kb() -> int:
    """The process's high-water mark of resident memory (VmHWM, the counter ru_maxrss reports), in kB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource  # Unix only; macOS reports bytes, not kB

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss // 1024 if sys.platform == "darwin" else maxrss


def temperatures(start: float, increment: float) -> list:
    if increment <= 0:
        return [start]
    steps = []
    t = start
    while t <= 1.0 + 1e-6:
        steps.append(round(t, 4))
        t += increment
    return steps


def transcribe_options(request: dict) -> dict:
    if request.get("library_defaults", False):
        # faster-whisper as its users get it: its own defaults (suppress_tokens [-1], compression ratio 2.4, ...), only
        # the language, word times and the VAD filter set.
        return {
            "language": request.get("language", "en"),
            "word_timestamps": bool(request.get("word_timestamps", True)),
            "vad_filter": bool(request.get("vad_filter", False)),
        }
    return {
        "language": request.get("language", "en"),
        "beam_size": int(request.get("beam_size", 5)),
        "best_of": int(request.get("best_of", 5)),
        "patience": 1,
        "length_penalty": 1,
        "temperature": temperatures(
            float(request.get("temperature", 0.0)), float(request.get("temperature_increment", 0.2))
        ),
        "compression_ratio_threshold": 2.4,
        "log_prob_threshold": -1.0,
        "no_speech_threshold": 0.6,
        "condition_on_previous_text": True,
        "prompt_reset_on_temperature": 1.0,
        "suppress_blank": True,
        "suppress_tokens": [-1] if request.get("suppress_non_speech", False) else [],
        "without_timestamps": False,
        "max_initial_timestamp": 1.0,
        "word_timestamps": bool(request.get("word_timestamps", True)),
        "vad_filter": bool(request.get("vad_filter", False)),
    }


def run(model: WhisperModel, path: str, options: dict) -> dict:
    started = time.perf_counter()
    cpu_started = time.process_time()
    segments_iter, info = model.transcribe(path, **options)
    segments = list(segments_iter)  # decoding happens while the generator is consumed
    elapsed_ms = (time.perf_counter() - started) * 1000
    cpu_ms = (time.process_time() - cpu_started) * 1000
    words = []
    for segment in segments:
        for word in segment.words or []:
            words.append(
                {"word": word.word, "start": word.start, "end": word.end, "probability": word.probability}
            )
    return {
        "file": path,
        "text": "".join(s.text for s in segments).strip(),
        "language": info.language,
        "language_probability": info.language_probability,
        "duration": info.duration,
        "transcribe_ms": elapsed_ms,
        "cpu_ms": cpu_ms,
        "segments": [
            {
                "start": s.start,
                "end": s.end,
                "text": s.text,
                "avg_logprob": s.avg_logprob,
                "no_speech_prob": s.no_speech_prob,
                "temperature": s.temperature,
                "compression_ratio": s.compression_ratio,
            }
            for s in segments
        ],
        "words": words,
    }


def main() -> int:
    if len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    request = json.load(sys.stdin)
    threads = int(request.get("threads", 2))
    compute_type = request.get("compute_type", "float32")

    started = time.perf_counter()
    model = WhisperModel(request["model"], device="cpu", compute_type=compute_type, cpu_threads=threads, num_workers=1)
    load_ms = (time.perf_counter() - started) * 1000

    options = transcribe_options(request)
    files = request["files"]
    warmup_ms = 0.0
    warmup_cpu_ms = 0.0
    warmup = request.get("warmup", True)
    if warmup and files:
        started = time.perf_counter()
        for path in files if warmup == "all" else files[:1]:
            warmup_cpu_ms += run(model, path, options)["cpu_ms"]
        warmup_ms = (time.perf_counter() - started) * 1000
    peak_after_warmup = peak_rss_kb()

    results = [run(model, path, options) for path in files]
    json.dump(
        {
            "faster_whisper": version("faster-whisper"),
            "ctranslate2": version("ctranslate2"),
            "compute_type": compute_type,
            "threads": threads,
            "import_ms": _import_ms,
            "load_ms": load_ms,
            "warmup_ms": warmup_ms,
            "warmup_cpu_ms": warmup_cpu_ms,
            "peak_rss_kb_after_warmup": peak_after_warmup,
            "peak_rss_kb": peak_rss_kb(),
            "options": options,
            "results": results,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
