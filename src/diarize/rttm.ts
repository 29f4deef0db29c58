/**
 * RTTM (NIST Rich Transcription Time Marked) reading and writing, for the SPEAKER records that diarization
 * references and hypotheses use:
 *
 *     SPEAKER <file-id> <channel> <onset> <duration> <NA> <NA> <speaker> <NA> <NA>
 *
 * Fields are separated by any run of whitespace. Reading is lenient about what is not a SPEAKER record (blank
 * lines, `;;` comments, other record types such as SPKR-INFO are skipped) and strict about SPEAKER records,
 * because a half-read reference silently skews every score computed from it.
 */
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { integerOption } from '../util/validate.js';
import { type SpeakerTurn, validateTurns } from './turn.js';

// A plain decimal, as RTTM writers produce; Number() alone would also take '', '0x1A' and 'Infinity'.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const RECORD = 'SPEAKER <file-id> <channel> <onset> <duration> <NA> <NA> <speaker> [<NA> <NA>]';

/**
 * Reads the SPEAKER records of an RTTM document, grouped by file id (in order of first appearance), each file's
 * turns sorted by start. A turn ends at onset + duration. The channel is not kept. A SPEAKER record must have
 * 8 to 10 fields (the last two `<NA>` fields are optional), a non-negative onset and duration, and a speaker name
 * other than `<NA>`.
 * @param source names the document in error messages (a file path, for example).
 * @throws InvalidOptionValueError naming `${source}: line N` for a malformed SPEAKER record.
 */
export function parseRttm(text: string, source = 'rttm'): Map<string, SpeakerTurn[]> {
  if (typeof text !== 'string') throw new InvalidOptionTypeError(source, 'RTTM text (a string)', text);
  const files = new Map<string, SpeakerTurn[]>();
  const lines = text.split(/\r\n|\n|\r/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line.length === 0 || line.startsWith(';;')) continue;
    const fields = line.split(/\s+/);
    if (fields[0] !== 'SPEAKER') continue;
    const where = `${source}: line ${index + 1}`;
    if (fields.length < 8 || fields.length > 10) {
      throw new InvalidOptionValueError(where, `a record of 8 to 10 fields: ${RECORD}`, line);
    }
    const [, fileId, , onsetField, durationField, , , speaker] = fields as [string, ...string[]];
    const onset = nonNegative(onsetField);
    const duration = nonNegative(durationField);
    if (onset === undefined) throw new InvalidOptionValueError(where, 'a non-negative onset in seconds', line);
    if (duration === undefined) throw new InvalidOptionValueError(where, 'a non-negative duration in seconds', line);
    if (speaker === undefined || speaker === '<NA>') throw new InvalidOptionValueError(where, 'a speaker name', line);
    const turns = files.get(fileId as string) ?? [];
    turns.push({ start: onset, end: onset + duration, speaker });
    files.set(fileId as string, turns);
  }
  for (const turns of files.values()) turns.sort((a, b) => a.start - b.start || a.end - b.end);
  return files;
}

/**
 * Writes turns as RTTM SPEAKER records, one newline-terminated line per turn, sorted by start. Times have three
 * decimals; each duration is taken between the rounded start and end, so that reading the result back gives the
 * rounded times exactly. Whitespace in the file id and in speaker labels becomes `_` (RTTM fields cannot hold it).
 * @throws InvalidOptionTypeError / InvalidOptionValueError for an empty file id, a bad channel or a bad turn.
 */
export function formatRttm(fileId: string, turns: SpeakerTurn[], channel = 1): string {
  if (typeof fileId !== 'string') throw new InvalidOptionTypeError('fileId', 'a string', fileId);
  const id = fileId.trim().replace(/\s+/g, '_');
  if (id.length === 0) throw new InvalidOptionValueError('fileId', 'a non-empty file id', fileId);
  integerOption('channel', channel, 0, Number.MAX_SAFE_INTEGER);
  const sorted = validateTurns('turns', turns).sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  for (const { start, end, speaker } of sorted) {
    const startMs = Math.round(start * 1000);
    const durationMs = Math.round(end * 1000) - startMs;
    const name = speaker.trim().replace(/\s+/g, '_') || '_';
    out += `SPEAKER ${id} ${channel} ${seconds(startMs)} ${seconds(durationMs)} <NA> <NA> ${name} <NA> <NA>\n`;
  }
  return out;
}

function nonNegative(field: string | undefined): number | undefined {
  if (field === undefined || !DECIMAL.test(field)) return undefined;
  const value = Number(field);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

const seconds = (ms: number): string => (ms / 1000).toFixed(3);
