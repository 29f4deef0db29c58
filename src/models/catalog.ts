/**
 * The model catalog: which files can be downloaded, from where, and how each is verified.
 *
 * The data lives in `<package root>/models/catalog.json`, shipped with the package. Where its hashes come from:
 * - sha256 and byte sizes are the Git LFS metadata of each file on Hugging Face. voxmill cannot reach Hugging Face
 *   from where it is built, so every value was taken from at least two independent public manifests that agree
 *   (for example EmilLykke/codictate `src/shared/speech-models.ts`, braidcast/braidcast-studio
 *   `frontend/src/voice/VoiceModels.cpp`, and the shared test data's `models/README.md` and `MANIFEST.json` for
 *   tiny, tiny.en, base, silero-v6.2.0 and silero-v5.1.2; the Silero v6.2.0 hash was also checked against the real
 *   file).
 * - sha1 is what whisper.cpp `models/README.md` publishes, and only for the full-precision models.
 * An entry with neither digest is verified by size only; pulling it warns.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';

/** What a catalog file is for: a whisper model, a Silero VAD, a Piper voice model or a Piper voice config. */
export type ModelKind = 'whisper' | 'vad' | 'piper-voice' | 'piper-config';

/** Curated facts about a Piper voice that its config does not carry. */
export interface CatalogVoice {
  /** Voice id without the quality (`en_US-lessac`), as `listVoices()` reports it. */
  readonly id: string;
  readonly quality: 'x_low' | 'low' | 'medium' | 'high';
  /** `neutral` for multi-speaker voices whose speakers are of both genders. */
  readonly gender: 'female' | 'male' | 'neutral';
}

/** One downloadable model file. */
export interface CatalogEntry {
  /** Stable id used on the command line and in configuration, e.g. `"tiny.en"`, `"base-q5_1"`. */
  readonly id: string;
  readonly kind: ModelKind;
  /** File name, both upstream and in the local models directory (no directory part). */
  readonly file: string;
  /** Upstream download URL (http or https). */
  readonly url: string;
  /** Exact size in bytes. */
  readonly bytes: number;
  /** Lowercase hex sha256, or null when no trusted value is published. */
  readonly sha256: string | null;
  /** Lowercase hex SHA-1 where upstream publishes one; used only when `sha256` is null. */
  readonly sha1?: string | null;
  /** Whisper models: whether the model handles languages other than English. Absent for other kinds. */
  readonly multilingual?: boolean;
  /** Ids of entries pulled along with this one (a Piper voice's config). */
  readonly companions?: readonly string[];
  /** Piper voices: the voice this file is a quality variant of. */
  readonly voice?: CatalogVoice;
  /** One line for humans. */
  readonly description: string;
}

/** A validated catalog. */
export interface Catalog {
  readonly models: readonly CatalogEntry[];
  /** Service ids (`svc-stt-1`, `svc-stt-1-flash`, `vad`) mapped to catalog ids. */
  readonly defaults: Readonly<Record<string, string>>;
}

const MODEL_KINDS: readonly ModelKind[] = ['whisper', 'vad', 'piper-voice', 'piper-config'];
const VOICE_QUALITIES = ['x_low', 'low', 'medium', 'high'] as const;
const VOICE_GENDERS = ['female', 'male', 'neutral'] as const;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;
const SHA1_PATTERN = /^[0-9a-f]{40}$/;
// A file name that cannot climb out of the models directory or hide as a dot file.
const FILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Where the packaged catalog is. src/models/catalog.ts and dist/models/catalog.js both sit two levels down. */
export function catalogPath(): string {
  return fileURLToPath(new URL('../../models/catalog.json', import.meta.url));
}

let packaged: Catalog | undefined;

/** The packaged catalog, read and validated once. */
export function loadCatalog(): Catalog {
  if (packaged === undefined) {
    const path = catalogPath();
    packaged = parseCatalog(JSON.parse(readFileSync(path, 'utf8')) as unknown, path);
  }
  return packaged;
}

/** The packaged catalog entry with this id, or undefined. Service ids are not resolved here (see `catalogDefaults`). */
export function findCatalogEntry(id: string): CatalogEntry | undefined {
  return loadCatalog().models.find((entry) => entry.id === id);
}

/** Every packaged catalog entry, in catalog order. */
export function listCatalog(): readonly CatalogEntry[] {
  return loadCatalog().models;
}

/** Service id -> catalog id, from the packaged catalog. */
export function catalogDefaults(): Readonly<Record<string, string>> {
  return loadCatalog().defaults;
}

/**
 * Validates a parsed catalog document. `source` names it in error messages.
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the entry and the field.
 */
export function parseCatalog(document: unknown, source = 'catalog'): Catalog {
  if (!isRecord(document)) throw new InvalidOptionTypeError(source, 'an object', document);
  const { models, defaults } = document;
  if (!Array.isArray(models)) throw new InvalidOptionTypeError(`${source}: models`, 'an array', models);
  const entries = models.map((entry, index) => validateCatalogEntry(entry, `${source}: models[${index}]`));
  const seenIds = new Set<string>();
  const seenFiles = new Set<string>();
  for (const entry of entries) {
    if (seenIds.has(entry.id)) throw duplicate(source, 'id', entry.id);
    if (seenFiles.has(entry.file)) throw duplicate(source, 'file', entry.file);
    seenIds.add(entry.id);
    seenFiles.add(entry.file);
  }
  for (const entry of entries) {
    for (const companion of entry.companions ?? []) {
      if (!seenIds.has(companion)) {
        throw new InvalidOptionValueError(`${source}: ${entry.id}.companions`, 'ids of catalog entries', companion);
      }
    }
  }
  if (!isRecord(defaults)) throw new InvalidOptionTypeError(`${source}: defaults`, 'an object', defaults);
  const checkedDefaults: Record<string, string> = {};
  for (const [service, id] of Object.entries(defaults)) {
    if (typeof id !== 'string' || !seenIds.has(id)) {
      throw new InvalidOptionValueError(`${source}: defaults["${service}"]`, 'the id of a catalog entry', id);
    }
    checkedDefaults[service] = id;
  }
  return Object.freeze({ models: Object.freeze(entries), defaults: Object.freeze(checkedDefaults) });
}

/**
 * Validates one entry, for the catalog and for entries handed to `pullModel` directly.
 * `where` prefixes the error's `param`; the entry's id is added once known.
 */
export function validateCatalogEntry(value: unknown, where = 'entry'): CatalogEntry {
  if (!isRecord(value)) throw new InvalidOptionTypeError(where, 'an object', value);
  const id = value.id;
  if (typeof id !== 'string' || id.length === 0 || !FILE_NAME_PATTERN.test(id)) {
    throw new InvalidOptionValueError(`${where}.id`, 'a non-empty id of letters, digits, ".", "_" or "-"', id);
  }
  const at = `${where} ("${id}")`;
  const { kind, file, url, bytes, sha256, sha1, multilingual, description, companions, voice } = value;
  if (!MODEL_KINDS.includes(kind as ModelKind)) {
    throw new InvalidOptionValueError(`${at}.kind`, `one of ${MODEL_KINDS.join(', ')}`, kind);
  }
  if (typeof file !== 'string' || !FILE_NAME_PATTERN.test(file)) {
    throw new InvalidOptionValueError(`${at}.file`, 'a plain file name without a directory', file);
  }
  if (typeof url !== 'string' || !isHttpUrl(url)) throw new InvalidOptionValueError(`${at}.url`, 'an http(s) URL', url);
  if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidOptionValueError(`${at}.bytes`, 'a positive integer', bytes);
  }
  if (sha256 !== null && (typeof sha256 !== 'string' || !SHA256_PATTERN.test(sha256))) {
    throw new InvalidOptionValueError(`${at}.sha256`, '64 lowercase hex digits or null', sha256);
  }
  if (sha1 !== undefined && sha1 !== null && (typeof sha1 !== 'string' || !SHA1_PATTERN.test(sha1))) {
    throw new InvalidOptionValueError(`${at}.sha1`, '40 lowercase hex digits, null or absent', sha1);
  }
  if (kind === 'whisper' && typeof multilingual !== 'boolean') {
    throw new InvalidOptionTypeError(`${at}.multilingual`, 'a boolean for a whisper model', multilingual);
  }
  if (typeof description !== 'string') throw new InvalidOptionTypeError(`${at}.description`, 'a string', description);
  if (
    companions !== undefined &&
    (!Array.isArray(companions) || !companions.every((c) => typeof c === 'string' && FILE_NAME_PATTERN.test(c)))
  ) {
    throw new InvalidOptionTypeError(`${at}.companions`, 'an array of catalog ids', companions);
  }
  const checkedVoice = voice === undefined ? undefined : validateVoice(`${at}.voice`, voice);
  if (kind === 'piper-voice' && checkedVoice === undefined) {
    throw new InvalidOptionTypeError(`${at}.voice`, '{ id, quality, gender } for a Piper voice', voice);
  }
  const entry: CatalogEntry = {
    id,
    kind: kind as ModelKind,
    file,
    url,
    bytes,
    sha256: sha256 as string | null,
    ...(typeof sha1 === 'string' ? { sha1 } : {}),
    ...(typeof multilingual === 'boolean' ? { multilingual } : {}),
    ...(companions === undefined ? {} : { companions: Object.freeze([...(companions as string[])]) }),
    ...(checkedVoice === undefined ? {} : { voice: checkedVoice }),
    description,
  };
  return Object.freeze(entry);
}

function validateVoice(where: string, value: unknown): CatalogVoice {
  if (!isRecord(value)) throw new InvalidOptionTypeError(where, 'an object', value);
  const { id, quality, gender } = value;
  if (typeof id !== 'string' || !FILE_NAME_PATTERN.test(id)) {
    throw new InvalidOptionValueError(`${where}.id`, 'a voice id', id);
  }
  if (!VOICE_QUALITIES.includes(quality as CatalogVoice['quality'])) {
    throw new InvalidOptionValueError(`${where}.quality`, `one of ${VOICE_QUALITIES.join(', ')}`, quality);
  }
  if (!VOICE_GENDERS.includes(gender as CatalogVoice['gender'])) {
    throw new InvalidOptionValueError(`${where}.gender`, `one of ${VOICE_GENDERS.join(', ')}`, gender);
  }
  return Object.freeze({ id, quality, gender } as CatalogVoice);
}

/** The entry followed by the entries pulled with it (a Piper voice's config), in pull order. */
export function withCompanions(entry: CatalogEntry): CatalogEntry[] {
  const companions = (entry.companions ?? []).map((id) => findCatalogEntry(id));
  return [entry, ...companions.filter((c): c is CatalogEntry => c !== undefined)];
}

/** Curated facts of a voice id (`en_US-lessac`) from the catalog's Piper entries. */
export function catalogVoice(voiceId: string): CatalogVoice | undefined {
  return listCatalog().find((entry) => entry.voice?.id === voiceId)?.voice;
}

function duplicate(source: string, field: 'id' | 'file', value: string): InvalidOptionValueError {
  return new InvalidOptionValueError(`${source}: models[].${field}`, `unique values (duplicate ${field})`, value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}
