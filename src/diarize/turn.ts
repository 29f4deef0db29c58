/**
 * The speaker turn shared by diarization, RTTM reading and writing, and DER scoring, and its one validator so
 * that every entry point refuses the same bad input with the same error.
 */
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { isPlainObject } from '../util/validate.js';

/** One stretch of speech by one speaker. Times are seconds from the start of the recording. */
export interface SpeakerTurn {
  start: number;
  end: number;
  speaker: string;
}

/**
 * Checks that `value` is an array of turns with finite times, `0 <= start <= end` and a non-empty speaker label,
 * and returns plain copies (callers may sort or merge them without touching the caller's objects).
 * `param` names the array in error messages (`reference[3].end`).
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the turn and the field.
 */
export function validateTurns(param: string, value: unknown): SpeakerTurn[] {
  if (!Array.isArray(value)) throw new InvalidOptionTypeError(param, 'an array of speaker turns', value);
  return value.map((turn: unknown, index) => {
    const at = `${param}[${index}]`;
    if (!isPlainObject(turn)) throw new InvalidOptionTypeError(at, 'an object { start, end, speaker }', turn);
    const { start, end, speaker } = turn;
    const checkedStart = seconds(`${at}.start`, start);
    const checkedEnd = seconds(`${at}.end`, end);
    if (checkedEnd < checkedStart) {
      throw new InvalidOptionValueError(`${at}.end`, `at least its start (${checkedStart})`, checkedEnd);
    }
    if (typeof speaker !== 'string') throw new InvalidOptionTypeError(`${at}.speaker`, 'a string', speaker);
    if (speaker.length === 0) throw new InvalidOptionValueError(`${at}.speaker`, 'a non-empty label', speaker);
    return { start: checkedStart, end: checkedEnd, speaker };
  });
}

function seconds(param: string, value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw new InvalidOptionTypeError(param, 'a number', value);
  if (!Number.isFinite(value) || value < 0) {
    throw new InvalidOptionValueError(param, 'a finite, non-negative number of seconds', value);
  }
  return value;
}
