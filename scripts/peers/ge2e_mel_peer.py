#!/usr/bin/env python3
"""Resemblyzer's mel front end in numpy, as the peer the TypeScript GE2E front end is checked against.

    python ge2e_mel_peer.py IN.f32 OUT.f32

IN is raw little-endian float32 16 kHz mono samples; OUT gets float32 frames [n_frames, 40]: what
librosa.feature.melspectrogram(y, sr=16000, n_fft=400, hop_length=160, n_mels=40) returns (transposed),
written from the formulas in scripts/models/ge2e-to-onnx.py (step 4), which matched librosa 0.10.2 to 8e-8.
"""

import sys

import numpy as np

SR, N_FFT, HOP, N_MELS = 16000, 400, 160, 40


def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    return np.where(f < 1000, 3 * f / 200, 15 + 27 * np.log(np.maximum(f, 1e-10) / 1000) / np.log(6.4))


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    return np.where(m < 15, 200 * m / 3, 1000 * np.exp((m - 15) * np.log(6.4) / 27))


def filterbank():
    fft_freqs = np.arange(N_FFT // 2 + 1) * SR / N_FFT
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0), hz_to_mel(SR / 2), N_MELS + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    weights = np.zeros((N_MELS, len(fft_freqs)))
    for i in range(N_MELS):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2 : N_MELS + 2] - mel_f[:N_MELS]))[:, None]
    return weights


def mels(wav):
    padded = np.pad(wav.astype(np.float64), N_FFT // 2)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    count = 1 + len(wav) // HOP
    frames = np.stack([padded[t * HOP : t * HOP + N_FFT] * window for t in range(count)])
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    return (power @ filterbank().T).astype(np.float32)


if __name__ == "__main__":
    samples = np.fromfile(sys.argv[1], dtype="<f4")
    mels(samples).astype("<f4").tofile(sys.argv[2])
