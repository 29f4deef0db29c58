// The clips of `knownSpeakers`, decoded for the speaker worker under the engine's audio budget. A clip that does not
// decode, or is too short or too long, fails with a validation error naming its `audio` field (it is an option of
// the call, not the audio being transcribed).
import { KNOWN_SPEAKER_LIMITS } from '../diarize/request.js';
import type { KnownSpeaker, KnownVoice } from '../diarize/types.js';
import { AudioDecodeError, AudioTooLongError, InvalidOptionValueError } from '../errors.js';
import type { AudioAdmission } from './audio-admission.js';

/** The decoded clips, held against the budget until `release`. */
export interface DecodedVoices {
  voices: KnownVoice[];
  release: () => void;
}

/**
 * Decodes each known speaker's clip to 16 kHz mono, one at a time.
 * @param param the option's name in errors (`diarize.knownSpeakers` or `knownSpeakers`).
 * @throws InvalidOptionValueError naming `<param>[i].audio`; QueueFullError when the budget is full.
 */
export async function decodeKnownSpeakers(
  admission: AudioAdmission,
  known: readonly KnownSpeaker[],
  param: string,
  signal: AbortSignal | undefined,
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
      const admitted = await admission
        .decode(input, { maxDurationSeconds: maxSeconds, copies: 1, stereo: false, allowEmpty: false, signal })
        .catch((error: unknown) => {
          if (error instanceof AudioTooLongError) {
            throw new InvalidOptionValueError(at, `at most ${maxSeconds} s of audio`, input);
          }
          if (error instanceof AudioDecodeError) {
            throw new InvalidOptionValueError(at, `audio that decodes (${error.code}: ${error.message})`, input);
          }
          throw error;
        });
      releases.push(admitted.release);
      if (admitted.audio.duration < minSeconds) {
        throw new InvalidOptionValueError(
          at,
          `at least ${minSeconds} s of audio (it is ${admitted.audio.duration.toFixed(2)} s)`,
          input,
        );
      }
      voices.push({ name, samples: admitted.audio.samples });
    }
    return { voices, release };
  } catch (error) {
    release();
    throw error;
  }
}
