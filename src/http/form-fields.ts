// Reading the text fields of a multipart form: the errors both transcription routes answer with, and form booleans.
import { AudioDecodeError } from '../errors.js';
import { truncateText } from '../util/truncate.js';
import { HttpError } from './http-error.js';

export function missingField(param: string): HttpError {
  return new HttpError(400, 'missing_parameter', `${param} is required`, { param });
}

export function invalidField(param: string, expected: string, received: string): HttpError {
  const quoted = JSON.stringify(truncateText(received, 80));
  return new HttpError(400, 'invalid_value', `${param} must be ${expected}; received ${quoted}`, {
    param,
  });
}

/** Form booleans as HTML forms and SDKs send them. */
export function formBoolean(param: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  const lower = value.toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  throw invalidField(param, 'true, false, 1 or 0', value);
}

/** A form number within [min, max]. */
export function formNumber(param: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < min || number > max) {
    throw invalidField(param, `a number from ${min} to ${max}`, value);
  }
  return number;
}

/**
 * A transcription failure as the routes answer it: the bytes said which container the upload is, so a decoder
 * that cannot read it found a damaged file (400 `audio_decode_failed`); anything else as it is.
 */
export function uploadDecodeError(error: unknown, container: string, fileField: string): unknown {
  if (error instanceof AudioDecodeError && error.code === 'AUDIO_UNSUPPORTED') {
    return new HttpError(
      400,
      'audio_decode_failed',
      `the file looks like ${container} but is damaged: ${error.message}`,
      {
        param: fileField,
        cause: error,
      },
    );
  }
  return error;
}

/** `data:[<media type>][;base64],<data>` with an audio (or unnamed) media type, base64-encoded. */
const AUDIO_DATA_URL = /^data:(audio\/[\w.+-]+|application\/octet-stream)?((?:;[\w.+-]+=[\w.+-]+)*);base64,/i;

/** The bytes of an audio data URL (OpenAI's `known_speaker_references[]`). */
export function audioDataUrl(param: string, value: string): Buffer {
  const head = AUDIO_DATA_URL.exec(value);
  const data = head ? value.slice(head[0].length).replace(/\s+/g, '') : '';
  if (!head || data.length === 0 || data.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
    throw invalidField(param, 'an audio data URL (data:audio/wav;base64,...)', truncateText(value, 48));
  }
  return Buffer.from(data, 'base64');
}
