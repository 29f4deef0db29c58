// A voice's graph as a synthesis needs it: with its phoneme durations as an output (word timings,
// duration-output.ts), with its convolutions in int8 (voice-quantize.ts), both, or neither (the voice file itself).
// An edited model is cached beside the voice under a hidden name keyed by the edits and the voice file's size and time
// (the user's file is never changed), written atomically; older edits of the same kind are removed. Where that
// directory cannot be written, the edited bytes are used from memory.
import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { mayWriteIn, writeAtomically } from '../util/write-atomically.js';
import { addDurationOutput, DURATION_EDIT_VERSION } from './duration-output.js';
import { QUANTIZE_EDIT_VERSION, quantizeConvWeights } from './voice-quantize.js';

/** Which edits a voice's graph gets. */
export interface VoiceEdits {
  /** Phoneme durations as an extra output. */
  timed: boolean;
  /** Conv weights in int8. */
  int8: boolean;
}

/** Where the edited model lives: a file to load, or (its directory read-only) the bytes. */
export type EditedVoiceModel = ({ path: string } | { bytes: Uint8Array }) & {
  /** Whether it was made now (false: a cached file, or no edit at all). */
  made: boolean;
};

/** The hidden name's part that says which edits a cached file has: `timed`, `int8`, `timed-int8`. */
function editName(edits: VoiceEdits): string {
  return [edits.timed ? 'timed' : '', edits.int8 ? 'int8' : ''].filter(Boolean).join('-');
}

/**
 * The voice at `modelPath` with `edits` made: the voice file itself when there are none, the cached edit when it
 * matches the file's size and time, else made now and cached. Throws DurationGraphError or QuantizeGraphError when the
 * graph cannot take an edit.
 */
export async function editedVoiceModel(modelPath: string, edits: VoiceEdits): Promise<EditedVoiceModel> {
  if (!edits.timed && !edits.int8) return { path: modelPath, made: false };
  const info = await stat(modelPath);
  const versions = `${edits.timed ? DURATION_EDIT_VERSION : 0}.${edits.int8 ? QUANTIZE_EDIT_VERSION : 0}`;
  const key = createHash('sha256').update(`${versions}:${info.size}:${info.mtimeMs}`).digest('hex').slice(0, 16);
  const dir = dirname(modelPath);
  const prefix = `.${basename(modelPath)}.${editName(edits)}-`;
  const cachePath = join(dir, `${prefix}${key}.onnx`);
  try {
    await stat(cachePath);
    return { path: cachePath, made: false };
  } catch {
    // Not cached yet.
  }
  let parts: Uint8Array[] = [await readFile(modelPath)];
  if (edits.timed) parts = [addDurationOutput(parts[0] as Uint8Array).model];
  if (edits.int8) parts = (await quantizeConvWeights(parts[0] as Uint8Array)).parts;
  const inMemory = () => ({ bytes: parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts), made: true });
  if (!(await mayWriteIn(dir))) return inMemory();
  try {
    await writeAtomically(cachePath, parts);
  } catch {
    return inMemory();
  }
  // Older edits of this kind (with the optimized copies ONNX Runtime made of them), and temporary files a stopped
  // process left, go; a failure to remove one (another process still loading it, a sticky directory) is not this
  // request's failure.
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(prefix) && name !== basename(cachePath) && (await staleEdit(join(dir, name), prefix))) {
      await rm(join(dir, name), { force: true }).catch(() => {});
      for (const copy of names.filter((other) => other.startsWith(`.${name}.opt-`))) {
        await rm(join(dir, copy), { force: true }).catch(() => {});
      }
    }
  }
  return { path: cachePath, made: true };
}

/** A temporary file older than this was left by a process that stopped (another may be writing a younger one). */
const ABANDONED_PART_MS = 10 * 60_000;

/**
 * Whether `path` (named with `prefix`) is an edit of another key to remove: a finished `.<voice>.<edits>-<key>.onnx`,
 * or an abandoned `.part`; never `.<voice>.timed-int8-...` for the prefix `timed-`.
 */
async function staleEdit(path: string, prefix: string): Promise<boolean> {
  const rest = basename(path).slice(prefix.length);
  if (/^[0-9a-f]{16}\.onnx$/u.test(rest)) return true;
  if (!/^[0-9a-f]{16}\.onnx\.[0-9a-f]+\.part$/u.test(rest)) return false;
  const info = await stat(path).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs > ABANDONED_PART_MS;
}

/** The voice with its durations as an output ({@link editedVoiceModel} with only `timed`). */
export function timedVoiceModel(modelPath: string): Promise<EditedVoiceModel> {
  return editedVoiceModel(modelPath, { timed: true, int8: false });
}
