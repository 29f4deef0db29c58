// The clips of `knownSpeakers`, decoded for the speaker worker under the engine's audio budget, with where in each
// someone speaks. A clip that does not decode, is too long, or holds too little speech fails with a validation error
// naming its `audio` field (it is an option of the call, not the audio being transcribed).
import type { SpeechRegion } from '../audio/speech-regions.js';
import { KNOWN_SPEAKER_LIMITS } from '../diarize/request.js';
import type { KnownSpeaker, KnownVoice } from '../diarize/types.js';
import { AudioDecodeError, AudioTooLongError, InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import type { AudioAdmission } from './audio-admission.js';

/** The decoded clips, held against the budget until `release`. */
export interface DecodedVoices {
  voices: KnownVoice[];
  release: () => void;
}

export interface KnownSpeakerDecoding {
  admission: AudioAdmission;
  /** Speech regions of a clip (the diarization's VAD); it may overwrite the samples it gets. */
  findSpeech: (samples: Float32Array) => Promise<SpeechRegion[]>;
  /** The call's own audio limit: no clip is longer than it (nor than KNOWN_SPEAKER_LIMITS.maxSeconds). */
  maxDurationSeconds: number;
  signal: AbortSignal | undefined;
}

/** Errors of decoding a clip, renamed to the clip's field. */
function clipError(error: unknown, at: string, input: unknown): unknown {
  if (error instanceof AudioTooLongError) {
    return new InvalidOptionValueError(at, `at most ${error.maxDurationSeconds} s of audio`, input);
  }
  if (error instanceof AudioDecodeError) {
    return new InvalidOptionValueError(at, `audio that decodes (${error.code}: ${error.message})`, input);
  }
  // The decoder names its argument `input`: here that is the clip.
  if (error instanceof InvalidOptionTypeError && error.param === 'input') {
    return new InvalidOptionTypeError(at, 'audio (a path, a Buffer, a Uint8Array or a Float32Array)', input);
  }
  if (error instanceof InvalidOptionValueError && error.param === 'input') {
    return new InvalidOptionValueError(at, 'audio (a non-empty path, a Buffer, a Uint8Array or a Float32Array)', input);
  }
  return error;
}

/**
 * Decodes each known speaker's clip to 16 kHz mono, one at a time, and finds its speech.
 * @param param the option's name in errors (`diarize.knownSpeakers` or `knownSpeakers`).
 * @throws InvalidOptionValueError / InvalidOptionTypeError naming `<param>[i].audio`; QueueFullError when the
 *   budget is full.
 */
export async function decodeKnownSpeakers(
  known: readonly KnownSpeaker[],
  param: string,
  { admission, findSpeech, maxDurationSeconds, signal }: KnownSpeakerDecoding,
): Promise<DecodedVoices> {
  const releases: Array<() => void> = [];
  const release = () => {
    for (const done of releases.splice(0)) done();
  };
  const { minSeconds, maxSeconds } = KNOWN_SPEAKER_LIMITS;
  try {
    const voices: KnownVoice[] = [];
    for (const [index, { name, audio: input }] of known.entries()) {
      const at = `${param}[${index}].audio`;
      // Two copies: the engine's, and the one sent to the speaker worker with the job.
      const admitted = await admission
        .decode(input, {
          maxDurationSeconds: Math.min(maxSeconds, maxDurationSeconds),
          copies: 2,
          stereo: false,
          allowEmpty: false,
          signal,
        })
        .catch((error: unknown) => {
          throw clipError(error, at, input);
        });
      releases.push(admitted.release);
      const { samples } = admitted.audio;
      // A clip is embedded over its speech only, as the recording is: silence around it would dilute the voice.
      const speech = await findSpeech(samples.slice());
      const seconds = speech.reduce((sum, region) => sum + region.end - region.start, 0);
      if (seconds < minSeconds) {
        throw new InvalidOptionValueError(
          at,
          `a clip with at least ${minSeconds} s of speech (the VAD found ${seconds.toFixed(2)} s)`,
          input,
        );
      }
      voices.push({ name, samples, speech });
    }
    return { voices, release };
  } catch (error) {
    release();
    throw error;
  }
}
