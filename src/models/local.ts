// Models a user brings (`voxmill models add <file>`): a whisper.cpp ggml file or a Piper voice, checked by its header
// (and config), copied into the models directory and recorded with its sha256 and size, so it is used by id like a
// catalog model, offline, with no catalog entry. Whisper files go to `<models dir>/local/<id>.bin` (with
// `<id>.bin.json` beside it); a voice goes where voices are scanned, the models directory itself, under its own name.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InvalidOptionValueError } from '../errors.js';
import { STT_MODEL_IDS, TTS_MODEL_IDS } from '../tiers.js';
import { parseVoiceConfig } from '../tts/voice-config.js';
import { findCatalogEntry } from './catalog.js';

/** The folder under the models directory that holds added whisper models. */
export const LOCAL_MODELS_DIR = 'local';
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const GGML_MAGIC = 0x67676d6c;
const HPARAMS = ['n_vocab', 'n_audio_ctx', 'n_audio_state', 'n_audio_head', 'n_audio_layer', 'n_text_ctx'] as const;

/** An added model, as recorded beside it. */
export interface AddedModel {
  id: string;
  kind: 'whisper' | 'piper-voice';
  /** Where it is installed (for a voice, its .onnx). */
  path: string;
  sha256: string;
  bytes: number;
  /** The file it was added from. */
  source: string;
}

/** Where an added whisper model with this id lives (it may not exist). */
export function localModelPath(id: string, dir: string): string {
  return join(dir, LOCAL_MODELS_DIR, `${id}.bin`);
}

/** The whisper models added to a models directory. */
export async function listLocalModels(dir: string): Promise<AddedModel[]> {
  const folder = join(dir, LOCAL_MODELS_DIR);
  if (!existsSync(folder)) return [];
  const records = (await readdir(folder)).filter((name) => name.endsWith('.bin.json')).sort();
  const models: AddedModel[] = [];
  for (const name of records) {
    try {
      models.push(JSON.parse(await readFile(join(folder, name), 'utf8')) as AddedModel);
    } catch {
      // A record that does not parse is not listed; the model file itself still works by id.
    }
  }
  return models;
}

/** Copies `from` to `part`, hashing on the way; removes `part` when the copy fails. */
async function copyHashed(from: string, part: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(createReadStream(from), tap, createWriteStream(part));
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/**
 * Installs files together: each is copied to `<target>.part` first, and only when every copy succeeded are they
 * renamed into place, in order (a voice's model before its config, so a scan never sees a config without its
 * model). Never leaves a partial file under a final name.
 */
async function installFiles(pairs: Array<[from: string, to: string]>) {
  const copied: Array<{ sha256: string; bytes: number }> = [];
  try {
    for (const [from, to] of pairs) copied.push(await copyHashed(from, `${to}.part`));
  } catch (error) {
    for (const [, to] of pairs) await rm(`${to}.part`, { force: true });
    throw error;
  }
  for (const [, to] of pairs) await rename(`${to}.part`, to);
  return copied;
}

async function readHead(file: string, length: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(length);
    const { bytesRead } = await handle.read(head, 0, length, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** What a whisper.cpp ggml file's header says, or why it is not one. */
async function whisperHeader(file: string): Promise<Record<string, number>> {
  const head = await readHead(file, 4 + 4 * HPARAMS.length);
  if (head.length < 4 + 4 * HPARAMS.length || head.readUInt32LE(0) !== GGML_MAGIC) {
    throw new InvalidOptionValueError('file', "a whisper.cpp ggml model (it starts with the 'ggml' magic)", file);
  }
  const header = Object.fromEntries(HPARAMS.map((name, i) => [name, head.readInt32LE(4 + 4 * i)]));
  // whisper's audio context is 1500 frames and its vocabulary about 51,865 tokens in every released size.
  if (header.n_audio_ctx !== 1500 || (header.n_vocab as number) < 51_000 || (header.n_vocab as number) > 52_000) {
    throw new InvalidOptionValueError('file', 'a whisper model (n_audio_ctx 1500, n_vocab about 51,865)', file);
  }
  return header;
}

/**
 * Adds a model file: `.onnx` (with its `.onnx.json` beside it) as a Piper voice, anything else as a whisper ggml
 * file (header checked). `id` names a whisper model (default: the file name without `.bin` and a `ggml-` prefix); a
 * voice keeps its file name, which is its id. An existing model of the same name is replaced only with `force`.
 * @throws InvalidOptionValueError naming what is wrong with the file or the id.
 */
export async function addLocalModel(
  file: string,
  options: { dir: string; id?: string | undefined; force?: boolean },
): Promise<AddedModel> {
  if (!existsSync(file)) throw new InvalidOptionValueError('file', 'an existing file', file);
  await mkdir(options.dir, { recursive: true });
  if (file.endsWith('.onnx')) return addVoice(file, options);
  const id =
    options.id ??
    basename(file)
      .replace(/\.bin$/u, '')
      .replace(/^ggml-/u, '');
  // An id ending in .bin would read as a file path wherever a model is named (`-m x.bin`).
  if (!ID.test(id) || id.endsWith('.bin')) {
    throw new InvalidOptionValueError('id', 'letters, digits, ".", "_" and "-" (1–64), not ending in .bin', id);
  }
  if (findCatalogEntry(id) || (STT_MODEL_IDS as readonly string[]).includes(id)) {
    throw new InvalidOptionValueError('id', 'an id no catalog model or service has (pass --id)', id);
  }
  await whisperHeader(file);
  const path = localModelPath(id, options.dir);
  if (existsSync(path) && !options.force) {
    throw new InvalidOptionValueError('id', `an id not added yet (${path} exists; --force replaces it)`, id);
  }
  await mkdir(join(options.dir, LOCAL_MODELS_DIR), { recursive: true });
  const [{ sha256, bytes }] = (await installFiles([[file, path]])) as [{ sha256: string; bytes: number }];
  const added: AddedModel = { id, kind: 'whisper', path, sha256, bytes, source: file };
  await writeFile(`${path}.json`, `${JSON.stringify(added, null, 2)}\n`);
  return added;
}

async function addVoice(file: string, options: { dir: string; id?: string | undefined; force?: boolean }) {
  if (options.id !== undefined) {
    throw new InvalidOptionValueError('id', 'not given for a Piper voice (its file name is its id)', options.id);
  }
  const configFile = `${file}.json`;
  if (!existsSync(configFile)) throw new InvalidOptionValueError('file', `a voice with its config ${configFile}`, file);
  let document: unknown;
  try {
    document = JSON.parse(await readFile(configFile, 'utf8'));
  } catch (error) {
    throw new InvalidOptionValueError('file', `a voice whose config is JSON (${(error as Error).message})`, configFile);
  }
  parseVoiceConfig(document, configFile);
  // An ONNX model is a protobuf ModelProto whose first field is ir_version (field 1, varint): the byte 0x08.
  if ((await readHead(file, 1))[0] !== 0x08) throw new InvalidOptionValueError('file', 'an ONNX model', file);
  const name = basename(file);
  const id = name.replace(/\.onnx$/u, '');
  if ((TTS_MODEL_IDS as readonly string[]).includes(id)) throw new InvalidOptionValueError('file', 'a voice', file);
  const path = join(options.dir, name);
  if (existsSync(path) && !options.force) {
    throw new InvalidOptionValueError('file', `a voice not installed yet (${path} exists; --force replaces it)`, file);
  }
  const [{ sha256, bytes }] = (await installFiles([
    [file, path],
    [configFile, `${path}.json`],
  ])) as [{ sha256: string; bytes: number }];
  return { id, kind: 'piper-voice', path, sha256, bytes, source: file } satisfies AddedModel;
}
