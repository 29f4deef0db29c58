"""CTranslate2's Whisper stage by stage, for bench/stage-profile.mjs: the log-mel features (faster-whisper's
FeatureExtractor), the encoder (`encode`), and the decoder (`generate` on the encoder's output: greedy or beam search
with the prompt faster-whisper builds for English without timestamps suppressed), each timed on its own, warm.

    <peers venv>/bin/python scripts/peers/ct2_stages.py < request.json

request.json: {"model": "/abs/ct2-dir", "file": "/abs/a.wav", "compute_type": "int8", "threads": 1,
               "beam_size": 5, "repeats": 3}

stdout: {"compute_type", "threads", "beam_size", "mel_ms", "encode_ms", "decode_ms", "tokens", "text"}: medians of
`repeats` warm runs (one untimed run first), tokens = tokens generated for the best hypothesis.
"""
import json
import statistics
import sys
import time

import ctranslate2
from faster_whisper import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor
from faster_whisper.tokenizer import Tokenizer
from tokenizers import Tokenizer as HfTokenizer


def main() -> None:
    request = json.load(sys.stdin)
    model = ctranslate2.models.Whisper(
        request["model"], device="cpu", compute_type=request["compute_type"], intra_threads=request["threads"]
    )
    audio = decode_audio(request["file"], sampling_rate=16000)
    extractor = FeatureExtractor(feature_size=model.n_mels)
    hf = HfTokenizer.from_file(f"{request['model']}/tokenizer.json")
    tokenizer = Tokenizer(hf, model.is_multilingual, task="transcribe", language="en" if model.is_multilingual else None)
    prompt = list(tokenizer.sot_sequence)
    beam = request["beam_size"]

    def features():
        # faster-whisper pads the clip to 30 s and keeps 3000 frames: the whole window, as whisper does.
        mel = extractor(audio, padding=160 * 3000)[:, :3000]
        return ctranslate2.StorageView.from_array(mel[None].astype("float32"))

    def run():
        t0 = time.perf_counter()
        mel = features()
        t1 = time.perf_counter()
        encoded = model.encode(mel, to_cpu=False)
        t2 = time.perf_counter()
        result = model.generate(encoded, [prompt], beam_size=beam, patience=1, length_penalty=1, max_length=448,
                                return_scores=True, suppress_blank=True, suppress_tokens=[-1])[0]
        t3 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, result.sequences_ids[0]

    run()
    runs = [run() for _ in range(request.get("repeats", 3))]
    tokens = runs[-1][3]
    json.dump({
        "ctranslate2": ctranslate2.__version__,
        "compute_type": request["compute_type"],
        "threads": request["threads"],
        "beam_size": beam,
        "mel_ms": statistics.median(r[0] for r in runs),
        "encode_ms": statistics.median(r[1] for r in runs),
        "decode_ms": statistics.median(r[2] for r in runs),
        "tokens": len(tokens),
        "text": tokenizer.decode(tokens),
    }, sys.stdout)


if __name__ == "__main__":
    main()
