// Where the speech is, without transcribing: Silero VAD (whisper.cpp) over 16 kHz mono PCM on a worker thread.
import { resolve } from 'node:path';
import { InvalidOptionTypeError } from '../errors.js';
import { type NativeDetectSpeechParams, native } from '../native.js';
import { runJob } from '../util/job.js';
import { objectOption, rejectUnknownKeys, signalOption, stringOption } from '../util/validate.js';
import { copyPcm } from './pcm-copy.js';
import { readVadSettings, VAD_DEFAULTS, VAD_SETTING_KEYS } from './vad-settings.js';

/** A stretch of speech, in seconds of the input. */
export interface SpeechRegion {
  start: number;
  end: number;
}

/** Settings of {@link detectSpeechRegions}; the same names, ranges and defaults as the transcription's `vad` option. */
export interface SpeechRegionOptions {
  /** Path to a ggml Silero VAD model (e.g. ggml-silero-v6.2.0.bin). */
  model: string;
  /** Speech probability threshold, 0–1. Default 0.5. */
  threshold?: number;
  /** Shorter speech is dropped, in ms (0–60000). Default 250. */
  minSpeechMs?: number;
  /** Silence needed to end speech, in ms (0–60000). Default 100. */
  minSilenceMs?: number;
  /**
   * Longer speech is split at a pause of 98 ms or more, in whole seconds (0–3600; 0 = no limit). Default: no
   * limit. whisper.cpp joins stretches less than 200 ms apart again, so it shows only with minSilenceMs above 200.
   */
  maxSpeechSeconds?: number;
  /** Padding around speech, in ms (0–10000). Default 30. */
  speechPadMs?: number;
  /** Stops the detection (checked about every 2 s of audio); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

const KEYS = ['model', ...VAD_SETTING_KEYS, 'signal'] as const;

/**
 * Finds the speech in 16 kHz mono samples (as {@link decodeAudio} returns them) with whisper.cpp's Silero
 * VAD, on a worker thread. The samples are copied first (in chunks that leave the event loop free), so the
 * worker thread never reads an array the caller may transfer or detach; that costs 4 bytes a sample. Returns
 * the regions sorted and non-overlapping, within [0, samples.length / 16000]; [] when there is no speech.
 * The regions are the ones transcription with `vad` keeps (before its `overlapSeconds`).
 * Fails with {@link ModelLoadError} when the model cannot be loaded, TranscriptionError (code
 * `TRANSCRIPTION_FAILED`) when the VAD fails, TypeError/RangeError subclasses for bad options.
 */
export async function detectSpeechRegions(
  samples: Float32Array,
  options: SpeechRegionOptions,
): Promise<SpeechRegion[]> {
  if (!(samples instanceof Float32Array)) {
    throw new InvalidOptionTypeError('samples', 'a Float32Array of 16 kHz mono PCM', samples);
  }
  const { run, signal } = prepareDetection(options);
  return run(await copyPcm(samples, signal));
}

/**
 * @internal {@link detectSpeechRegions} on samples the library owns and never hands out (what the engine decoded
 * itself): read in place by the worker thread, no copy.
 */
export function detectSpeechRegionsInPlace(
  samples: Float32Array,
  options: SpeechRegionOptions,
): Promise<SpeechRegion[]> {
  return prepareDetection(options).run(samples);
}

function prepareDetection(options: SpeechRegionOptions): {
  run: (samples: Float32Array) => Promise<SpeechRegion[]>;
  signal: AbortSignal | undefined;
} {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, KEYS);
  const model = stringOption('model', raw.model);
  if (model === undefined || model === '') {
    throw new InvalidOptionTypeError('model', 'a path to a ggml Silero VAD model', raw.model);
  }
  const params: NativeDetectSpeechParams = { modelPath: resolve(model), ...VAD_DEFAULTS, ...readVadSettings(raw, '') };
  const signal = signalOption('signal', raw.signal);
  return { run: (samples) => runJob(() => native().detectSpeech(samples, params), { signal }), signal };
}
