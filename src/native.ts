// The one place that loads the C++ addon and types its surface. Nothing else touches the .node file.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import type { VadSettings } from './audio/vad-settings.js';
import { NativeAddonError } from './errors.js';
import { addonFileForCpu, linuxGlibc, platformPackageAddon, platformPackageName } from './platform-package.js';
import { withOpenBlasIdleSleep } from './util/openblas-idle.js';

/** A native async job: the promise settles once; abort() asks the worker thread to stop early. */
export interface NativeJob<T> {
  promise: Promise<T>;
  abort(): void;
}

/** Errors rejected by native jobs carry one of these codes. */
export type NativeErrorCode =
  | 'AUDIO_DECODE_FAILED'
  | 'AUDIO_UNSUPPORTED'
  | 'AUDIO_EMPTY'
  | 'AUDIO_TOO_LONG'
  | 'FILE_NOT_FOUND'
  | 'ABORTED'
  | 'MODEL_LOAD_FAILED'
  | 'TRANSCRIPTION_FAILED'
  | 'VAD_FAILED'
  /** transcribe(): a window grew past `maxWindowTokens` (the caller decodes again with the full context). */
  | 'TOKEN_LIMIT'
  /** transcribe(): a pass of the audio (VAD joins included) is longer than `audioContext` covers. */
  | 'CONTEXT_TOO_SHORT'
  | 'OUT_OF_MEMORY'
  | 'INTERNAL'
  | 'AUDIO_ENCODE_FAILED'
  | 'ENCODER_BUSY'
  | 'ENCODER_CLOSED'
  | 'INVALID_ARGUMENT'
  | 'ENCODE_UNSUPPORTED_RATE'
  | 'VAD_STREAM_BUSY'
  | 'VAD_STREAM_CLOSED'
  /** An ONNX run failed (the model refused its inputs, or a kernel failed). */
  | 'INFERENCE_FAILED'
  /** run() or info() on an OnnxSession after release(). */
  | 'MODEL_RELEASED'
  /** phonemize(): espeak-ng has no voice of that name. */
  | 'NO_VOICE'
  /** phonemize(): espeak-ng's data could not be read, or the text not decoded. */
  | 'PHONEMIZER_FAILED';

export interface NativeDecodedAudio {
  samples: Float32Array;
  container: string;
  codec: string;
  sampleRate: number;
  channels: number;
  bitRate: number;
  /** Only when stereo was asked for and the source has 2+ channels: both sides at 16 kHz, as long as `samples`. */
  stereo?: { left: Float32Array; right: Float32Array };
}

export interface NativeDecodeOptions {
  maxDurationSeconds: number;
  /** Source rates outside [minSampleRate, maxSampleRate] fail with AUDIO_DECODE_FAILED (checked on every frame). */
  minSampleRate: number;
  maxSampleRate: number;
  stereo?: boolean;
  /** A container with no samples resolves with none instead of rejecting with AUDIO_EMPTY. */
  allowEmpty?: boolean;
}

/** All required: the addon takes no default of its own (WhisperModel.load owns them). */
export interface NativeLoadOptions {
  gpu: boolean;
  flashAttention: boolean;
  dtw: boolean;
  /** An f16 file's decoder matrices quantized to q8_0 at load (whisper.cpp patch 0013). */
  decoderInt8: boolean;
  /** A q8_0 copy of an f16 vocabulary projection for greedy steps (whisper.cpp patch 0019). */
  greedyInt8Vocabulary: boolean;
  gpuDevice: number;
}

export interface NativeModelInfo {
  /** whisper.cpp's size name: tiny, base, small, medium, large. */
  type: string;
  multilingual: boolean;
  vocabSize: number;
  audioLayers: number;
  textLayers: number;
  audioState: number;
  mels: number;
  /** ggml file type (ggml.h `enum ggml_ftype`): 0 f32, 1 f16, 7 q8_0, 8 q5_0, 9 q5_1, ... */
  ftype: number;
  /**
   * The DTW alignment-heads preset (e.g. `tiny.en`) calls with token times use, or null when word times use the token
   * heuristic.
   */
  dtwPreset: string | null;
  /** Whether calls without token times use flash attention. */
  flashAttention: boolean;
  /** Whether the decoder's matrices were quantized to q8_0 at load. */
  decoderInt8: boolean;
  /**
   * Whether greedy steps rank the vocabulary on an int8 copy of the projection and recompute the deciding logits
   * from the file's weights (the `greedyInt8Vocabulary` load option; made only of an f16 projection on the
   * CPU).
   */
  greedyInt8Vocabulary: boolean;
  /** Whether a GPU backend is in use. */
  gpu: boolean;
  /** ggml's name of the device the model runs on: `CPU`, `CUDA0`, `Vulkan0`, ... */
  device: string;
  disposed: boolean;
}

/** detectSpeech() settings: every VAD setting filled in (the addon has no defaults) and the model as a path. */
export type NativeDetectSpeechParams = VadSettings & {
  modelPath: string;
  /** CPU threads for Silero, 1–64. Default 1 (its graph is too small to gain from more). */
  threads?: number;
  /** Tests only: whisper.cpp's own segmentation in one pass that abort() cannot interrupt. */
  whisperSegmentation?: boolean;
};

/** VAD settings of a transcription as the addon takes them: all filled in, with how much audio to keep past speech. */
export type NativeVadParams = VadSettings & {
  modelPath: string;
  /** Seconds of audio kept past each speech end. */
  overlapSeconds: number;
};

/** A stretch of speech, in seconds of the input. */
export interface NativeSpeechRegion {
  start: number;
  end: number;
}

/**
 * transcribe() parameters. The required ones are those normalizeTranscribeOptions always sends (the addon takes no
 * default of its own); an optional one left out turns its feature off.
 */
export interface NativeTranscribeParams {
  /** Left out or '': detect the language. */
  language?: string;
  translate: boolean;
  threads: number;
  /** 0 (or 1): greedy decoding. */
  beamSize: number;
  bestOf: number;
  temperature: number;
  temperatureIncrement: number;
  entropyThreshold: number;
  logprobThreshold: number;
  noSpeechThreshold: number;
  /** '': no prompt. */
  initialPrompt: string;
  tokenTimestamps: boolean;
  tinydiarize: boolean;
  suppressNonSpeech: boolean;
  /** false: no window sees the text before it (the prompt, if any, goes to every window). */
  conditionOnPreviousText: boolean;
  maxSegmentLength?: number;
  splitOnWord?: boolean;
  vad?: NativeVadParams;
  /**
   * The encoder's context in audio positions (50 a second, 1..1500; 0 or left out: 1500, whisper's 30 s window). A
   * pass of audio it does not cover (twice the context < its 10 ms frames, VAD joins included) fails with
   * CONTEXT_TOO_SHORT, since whisper.cpp's DTW would abort the process on it.
   */
  audioContext?: number;
  /**
   * A window whose decoded tokens grow past this fails with TOKEN_LIMIT (1..448; 0 or left out: no limit; whisper.cpp
   * itself stops a window at 220).
   */
  maxWindowTokens?: number;
  progressEvents?: boolean;
  segmentEvents?: boolean;
}

export interface NativeToken {
  id: number;
  p: number;
  start: number;
  end: number;
  /** DTW timestamp in seconds, or -1 when DTW is off for this model. */
  dtw: number;
  special: boolean;
  byteLength: number;
}

export interface NativeSegment {
  start: number;
  end: number;
  text: string;
  speakerTurnNext: boolean;
  noSpeechProb: number;
  /** Every token's raw bytes back to back; `tokens[i].byteLength` slices it. */
  tokenBytes: Buffer;
  tokens: NativeToken[];
}

/** A stretch of speech the VAD kept: [origStart, origEnd] of the input is [procStart, procEnd] of what was decoded. */
export interface NativeSpeechSpan {
  origStart: number;
  origEnd: number;
  procStart: number;
  procEnd: number;
}

export interface NativeTranscription {
  language: string;
  vad: boolean;
  speech: NativeSpeechSpan[];
  segments: NativeSegment[];
}

export type NativeTranscribeEvent =
  | ['progress', { progress: number }]
  | ['segment', { index: number; start: number; end: number; text: string }]
  | ['speech', { spans: NativeSpeechSpan[] }];

export interface NativeWhisperModel {
  info(): NativeModelInfo;
  transcribe(
    samples: Float32Array,
    params: NativeTranscribeParams,
    onEvent?: (...event: NativeTranscribeEvent) => void,
  ): NativeTranscribeJob;
  dispose(): void;
}

/** A running transcription; `setThreads` sets the threads of its next graph passes (1 to 64). */
export interface NativeTranscribeJob extends NativeJob<NativeTranscription> {
  setThreads(threads: number): void;
}

/** Containers the native encoder writes: mp3 (libmp3lame), wav (s16le), Ogg Opus (libopus), raw s16le. */
export type NativeEncodeFormat = 'mp3' | 'wav' | 'opus' | 'pcm16' | 'aac' | 'flac';

export interface NativeEncoderOptions {
  format: NativeEncodeFormat;
  /** Rate of the Float32Array samples passed to encode(): an integer from 8000 to 192000. */
  inputSampleRate: number;
  /** 8000, 16000, 22050, 24000, 44100 or 48000; Opus: 8000, 12000, 16000, 24000 or 48000. */
  outputSampleRate: number;
  /** true: finish() returns one complete file with final headers; false: bytes stream out of every call. */
  whole: boolean;
  /** mp3/opus bits per second (6000 to 512000); 0 for PCM formats, where it is ignored. */
  bitRate: number;
}

/**
 * One native encoder: mono float32 PCM in, encoded bytes out, FFmpeg's work on a worker thread. One call
 * at a time: another call while one runs rejects with ENCODER_BUSY; after finish(), dispose() or a
 * failure, calls reject with ENCODER_CLOSED. The constructor throws INVALID_ARGUMENT or
 * ENCODE_UNSUPPORTED_RATE errors.
 */
export interface NativeAudioEncoder {
  /** The bytes ready so far (possibly none); always empty in whole mode. The samples are copied. */
  encode(samples: Float32Array): NativeJob<Buffer>;
  /** Flushes resampler, codec and muxer: streaming, the remaining bytes; whole, the complete file. */
  finish(): NativeJob<Buffer>;
  /** Frees the FFmpeg state now (or when the running job ends); idempotent. */
  dispose(): void;
}

/**
 * Silero VAD over 16 kHz mono audio pushed in pieces, its recurrent state carried from piece to piece (the
 * probabilities equal those of the whole audio at once). One push at a time: another while one runs rejects with
 * VAD_STREAM_BUSY; after dispose(), VAD_STREAM_CLOSED. The first push loads the model (MODEL_LOAD_FAILED); a failed
 * push (VAD_FAILED) leaves the stream failing. The constructor throws INVALID_ARGUMENT for a bad argument.
 */
export interface NativeVadStream {
  /**
   * The speech probability of every 512-sample window (32 ms) the samples complete, in order; the samples (copied, at
   * most 160,000) that do not fill a window wait for the next push. INVALID_ARGUMENT for more or for a non-Float32Array.
   */
  push(samples: Float32Array): NativeJob<Float32Array>;
  /** Frees the model now (or when the running push ends); idempotent. */
  dispose(): void;
}

/** A tensor given to or returned by an ONNX model; `data` holds the product of `dims` elements. */
export type NativeTensor =
  | { name: string; type: 'float32'; dims: number[]; data: Float32Array }
  | { name: string; type: 'int64'; dims: number[]; data: BigInt64Array };

/** What a model takes or gives: its element type (`float32`, `int64`, ...) and shape (-1: any size). */
export interface NativeTensorFacts {
  name: string;
  type: string;
  shape: number[];
}

export interface NativeOnnxSessionOptions {
  /** The ONNX Runtime library to open (the first load in a process fixes it): the one shipped beside the addon. */
  runtimePath: string;
  intraOpThreads: number;
  memoryArena: boolean;
  /** For a model given as bytes: what error messages call it. */
  name?: string;
  /**
   * Keep the graph ONNX Runtime optimized here for the next load: a path prefix, to which the runtime's version and
   * `.onnx` are added (native/onnx_core.h). Left out: no cache.
   */
  optimizedCache?: string;
}

/** One ONNX model on the addon's ONNX Runtime. Runs are jobs on libuv's pool; several may run at once. */
export interface NativeOnnxSession {
  info(): { inputs: NativeTensorFacts[]; outputs: NativeTensorFacts[] };
  /** The outputs named (every output when empty). The inputs are copied. abort() stops the run between kernels. */
  run(feeds: NativeTensor[], outputs: string[]): NativeJob<NativeTensor[]>;
  /** Drops this object's hold on the model; runs in flight finish first. */
  release(): void;
}

/** espeak-ng's phonemes of one clause of text, and its clause terminator flags (punctuation, sentence end). */
export interface NativeClause {
  phonemes: string;
  terminator: number;
}

export interface NativeDevice {
  name: string;
  description: string;
  type: 'cpu' | 'gpu' | 'igpu' | 'accelerator';
}

export interface NativeAddon {
  WhisperModel: { load(path: string, options: NativeLoadOptions): NativeJob<NativeWhisperModel> };
  decodeAudio(input: Uint8Array | string, options: NativeDecodeOptions): NativeJob<NativeDecodedAudio>;
  /**
   * Silero VAD over 16 kHz mono samples (read in place, not copied) on a worker thread; abort() is honoured
   * about every 2 s of audio. Rejects with MODEL_LOAD_FAILED, VAD_FAILED or ABORTED.
   */
  detectSpeech(samples: Float32Array, params: NativeDetectSpeechParams): NativeJob<NativeSpeechRegion[]>;
  AudioEncoder: new (options: NativeEncoderOptions) => NativeAudioEncoder;
  VadStream: new (params: { modelPath: string; threads?: number }) => NativeVadStream;
  /** `cpuTarget` and `blas`: the CMake VOXMILL_CPU the addon was built with, and whether it links OpenBLAS. */
  versions(): {
    whisper: string;
    ffmpeg: string;
    /** static: FFmpeg built in (scripts/static-ffmpeg.mjs); system: the system's shared libraries. Absent from older builds. */
    ffmpegLinkage?: 'static' | 'system';
    system: string;
    /** Absent from an addon built before they were recorded. */
    cpuTarget?: 'native' | 'portable' | 'x86-64-v2';
    blas?: 'openblas' | 'none';
    /** The ggml backends compiled in (`CPU`, `BLAS`, `CUDA`, `Vulkan`, ...), whether or not they found a device. */
    backends?: string[];
    /** The espeak-ng version compiled in. */
    espeak: string;
  };
  devices(): NativeDevice[];
  OnnxSession: {
    /** From a file path or the model's bytes (copied). Rejects with MODEL_LOAD_FAILED naming what failed. */
    load(source: string | Uint8Array, options: NativeOnnxSessionOptions): NativeJob<NativeOnnxSession>;
  };
  /**
   * The ONNX Runtime this process loaded: its path and version ('' for both until the first model loads). With a
   * path, opens that library first (synchronously: for `voxmill doctor`); throws MODEL_LOAD_FAILED when it cannot.
   */
  onnxRuntime(path?: string): { path: string; version: string };
  /**
   * espeak-ng's clauses of each text for an espeak-ng voice (`en-us`), reading the data in `dataDir` (the first call
   * fixes it for the process). Rejects with NO_VOICE, PHONEMIZER_FAILED or ABORTED.
   */
  phonemize(dataDir: string, voice: string, texts: string[]): NativeJob<NativeClause[][]>;
  /**
   * The process is exiting (the main thread's `exit` event): a transcription that ends from now on does not wait for
   * its last events to reach JavaScript, which will not run again. Absent from an addon built before it.
   */
  markProcessExiting?(): void;
}

/**
 * An Error rejected by a native job, or thrown by a native call. Arguments of the wrong type or out of range throw
 * INVALID_ARGUMENT naming the argument (`params.threads`, `samples`) and the value received.
 */
export interface NativeError extends Error {
  code: NativeErrorCode;
}

export function isNativeError(error: unknown): error is NativeError {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string';
}

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
let cached: NativeAddon | undefined;
/** The addon a worker thread was told to load (its parent's), which wins over the lookup below. */
let given: { path: string; prebuilt: boolean } | undefined;
let loaded: { path: string; prebuilt: boolean } | undefined;

/**
 * A worker thread loads the addon its parent loaded (the parent passes addonPath() in its workerData): a worker run
 * from its TypeScript source as one bundle cannot find the package from its own module URL.
 */
export function useAddonAt(found: { path: string; prebuilt: boolean } | undefined): void {
  if (found) given = found;
}

/**
 * The addons that could serve this process, in the order they are tried: `VOXMILL_ADDON_PATH` alone when set; else the
 * platform package's (`@voxmill/linux-x64-gnu` and the like, an optional dependency npm installs where it matches),
 * the one built here (`build/Release`, by `npm run build:native`, or `scripts/build-native.mjs` in an app), and one
 * packed into the package itself (`prebuilds/<platform>-<arch>`, by `npm pack` of a checkout), those that exist.
 */
function addonCandidates(): { path: string; prebuilt: boolean }[] {
  if (given) return [given];
  // Relative to the working directory, as a path in the shell is (require() would read `build/x.node` as a package).
  if (process.env.VOXMILL_ADDON_PATH) return [{ path: resolve(process.env.VOXMILL_ADDON_PATH), prebuilt: false }];
  const candidates: { path: string; prebuilt: boolean }[] = [];
  const fromPackage = platformPackageAddon(packageRoot);
  if (fromPackage) candidates.push({ path: fromPackage, prebuilt: true });
  const built = join(packageRoot, 'build', 'Release', 'voxmill.node');
  if (existsSync(built)) candidates.push({ path: built, prebuilt: false });
  const prebuilt = join(packageRoot, 'prebuilds', `${process.platform}-${process.arch}`, 'voxmill.node');
  if (existsSync(prebuilt)) candidates.push({ path: prebuilt, prebuilt: true });
  return candidates;
}

/** The addon this thread loaded; before it loads, the first one it would try. */
export function addonPath(): { path: string; prebuilt: boolean } | undefined {
  return loaded ?? addonCandidates()[0];
}

/** The system libraries (FFmpeg's, OpenBLAS) a prebuilt addon links, as its build recorded them (prebuilds/<target>/voxmill.json). */
function prebuiltNeeds(path: string): string {
  try {
    const recorded = JSON.parse(readFileSync(join(dirname(path), 'voxmill.json'), 'utf8')) as {
      libraries?: string[];
      ffmpeg?: string[];
    };
    const libraries = recorded.libraries ?? recorded.ffmpeg;
    if (Array.isArray(libraries) && libraries.length > 0) return libraries.join(', ');
  } catch {
    // No record: the Debian 12 names below still say what to install.
  }
  return "FFmpeg's shared libraries";
}

// CUDA 13's runtime and cuBLAS on PyPI (as scripts/gpu/cuda-from-wheels.sh installs them).
const CUDA_WHEELS =
  'pip install nvidia-cuda-runtime nvidia-cublas, whose libraries are in site-packages/nvidia/cu13/lib,';
const FFMPEG_PACKAGES = 'on Debian 12: apt-get install libavformat59 libavcodec59 libswresample4 libavutil57';
const BUILD_HELP =
  "build it from source with 'npm install --save-dev cmake-js@8.0.0 node-addon-api@8.9.2 whisper-cpp-src@npm:nodejs-whisper@0.3.1' " +
  "and 'node node_modules/voxmill/scripts/build-native.mjs'; it needs cmake, make, nasm and a C++17 compiler " +
  '(apt-get install cmake g++ make nasm pkg-config), and fetches FFmpeg, ONNX Runtime and espeak-ng';

/**
 * What the addon opens at run time, shipped beside it: ONNX Runtime's library and espeak-ng's data. Never the
 * system's copies.
 */
export function nativeAssets(): { onnxRuntime: string; espeakData: string } {
  const found = addonPath();
  const dir = found ? dirname(found.path) : join(packageRoot, 'build', 'Release');
  return { onnxRuntime: join(dir, 'libonnxruntime.so.1'), espeakData: join(dir, 'espeak-ng-data') };
}

/**
 * Loads the addon once per thread (it is safe to load in worker_threads): the first candidate that loads. One that
 * cannot load here (a prebuilt addon for a newer glibc) gives way to the next (a local build); when none loads, the
 * first one's failure is thrown, with what would fix it.
 */
export function native(): NativeAddon {
  if (cached) return cached;
  const candidates = addonCandidates();
  if (candidates.length === 0) {
    // The package may be there, with no build this CPU runs (an x86-64 CPU without SSE4.2, or unreadable flags).
    if (addonFileForCpu() === null && platformPackageAddon(packageRoot, platformPackageName(), 'voxmill.node')) {
      throw new NativeAddonError(
        `${platformPackageName()}'s addon builds need AVX2 or SSE4.2, and this CPU has neither (or /proc/cpuinfo ` +
          `cannot be read): loading one could stop the process with SIGILL. Build one for this CPU; ${BUILD_HELP}`,
      );
    }
    throw new NativeAddonError(
      `the voxmill native addon is not installed for ${process.platform}-${process.arch}: no ${platformPackageName()} ` +
        '(npm installs it with voxmill where one is published, unless optional dependencies are omitted) and no ' +
        `local build; ${BUILD_HELP}`,
    );
  }
  let failure: NativeAddonError | undefined;
  for (const candidate of candidates) {
    try {
      cached = withOpenBlasIdleSleep(() => createRequire(import.meta.url)(candidate.path) as NativeAddon);
      loaded = candidate;
      // process.exit() waits for the addon's pool threads; one waiting for this thread would hang the exit for ever.
      const addon = cached;
      if (isMainThread) process.once('exit', () => addon.markProcessExiting?.());
      return cached;
    } catch (cause) {
      failure ??= loadFailure(candidate, cause);
    }
  }
  throw failure;
}

/** Why an addon did not load, with what would fix it. */
function loadFailure(found: { path: string; prebuilt: boolean }, cause: unknown): NativeAddonError {
  const message = (cause as Error).message;
  const glibc = /GLIBC_(\d+\.\d+)' not found/.exec(message);
  // The addon links the system's FFmpeg libraries (and OpenBLAS when it was built with it); without them dlopen
  // names the first one missing.
  const hint = glibc
    ? `; it needs glibc ${glibc[1]} or newer (this system's is ${linuxGlibc() ?? 'not glibc'}): ${BUILD_HELP}`
    : /\blib(av|sw)\w*\.so/.test(message)
      ? `; it needs ${found.prebuilt ? prebuiltNeeds(found.path) : "FFmpeg's shared libraries"} (${FFMPEG_PACKAGES})` +
        (found.prebuilt ? `, or ${BUILD_HELP}` : '')
      : /\blib(scipy_openblas|gfortran|quadmath)[\w-]*\.so/.test(message)
        ? `; the OpenBLAS it was built with (VOXMILL_BLAS=bundled) belongs beside it, in ${dirname(found.path)}: reinstall the package, or rebuild the addon (npm run build:native)`
        : /\blibz\.so/.test(message)
          ? '; the OpenBLAS bundled with it (its libgfortran) needs zlib: on Debian/Ubuntu apt-get install zlib1g, on RHEL/Fedora dnf install zlib'
          : /\blibopenblas\w*\.so/.test(message)
            ? `; it was built with OpenBLAS (on Debian 12: apt-get install libopenblas0), or rebuild it without: VOXMILL_BLAS=none npm run build:native`
            : /\blibcu(da|dart|blas|blasLt)\w*\.so/.test(message)
              ? `; it was built with VOXMILL_GPU=cuda and needs the CUDA runtime and cuBLAS libraries (a CUDA toolkit of the version it was built with, or ${CUDA_WHEELS} on LD_LIBRARY_PATH), or rebuild it for the CPU: npm run build:native`
              : /\blibvulkan\w*\.so/.test(message)
                ? '; it was built with VOXMILL_GPU=vulkan and needs the Vulkan loader (on Debian 12: apt-get install libvulkan1), or rebuild it for the CPU: npm run build:native'
                : '';
  return new NativeAddonError(`cannot load the voxmill native addon ${found.path}: ${message}${hint}`, { cause });
}
