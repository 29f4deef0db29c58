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
 * - Speaker-embedding models are assets of the k2-fsa/sherpa-onnx GitHub release `speaker-recongition-models` (the
 *   tag is misspelt upstream; the correct spelling 404s). The release publishes a `checksum.txt` voxmill cannot
 *   fetch, so every sha256 and size was taken from public download manifests that pin the asset, at least two
 *   agreeing per file, several of them noting that they match that checksum.txt. Among them:
 *   rmusser01/tldw_chatbook `tldw_chatbook/Audio/diarizer_engine_onnx.py` (resnet34, eres2net en, campplus en),
 *   Naresh-Khatri/unottr `src/main/models/catalog.ts` (campplus zh_en, campplus en and WeSpeaker CAM++, fetched
 *   from the Hugging Face mirror csukuangfj/speaker-embedding-models: the same bytes) and abdualzizaaa/arabic-dictate
 *   `arabic_dictate/meeting/models.py` (eres2net base, sha256 only). Embedding sizes come from the exporting
 *   recipes: WeSpeaker `examples/voxceleb/v2/conf` (`resnet.yaml` embed_dim 256, `campplus.yaml` 512) and
 *   3D-Speaker `speakerlab/bin/infer_sv.py` (the `embedding_size` that sherpa-onnx `scripts/3dspeaker/export-onnx.py`
 *   records as `output_dim`). Tensor names are those of WeSpeaker `wespeaker/bin/export_onnx.py` (`feats` -> `embs`)
 *   and of sherpa-onnx's 3D-Speaker export (`x` -> `embedding`); the feature recipes are WeSpeaker
 *   `wespeaker/bin/infer_onnx.py` and that export's metadata. NeMo TitaNet (`nemo_en_titanet_small.onnx`, 40257283
 *   bytes) is left out on purpose: it takes [N, 80, T] features and a length input, per-feature normalised, which is
 *   not the [N, T, 80] fbank contract of {@link CatalogEmbedding}.
 * - The speaker segmentation model is pyannote's segmentation-3.0 (MIT) as sherpa-onnx exported it, from the Hugging
 *   Face repository csukuangfj/sherpa-onnx-pyannote-segmentation-3-0 at a pinned revision (9403a690…): model.onnx,
 *   5,992,913 bytes, sha256 220ad67c…1079: the same size and digest in more than five independent public download
 *   manifests found by code search, three of them pinning that revision, two also the sha256 of the sherpa-onnx
 *   release archive that holds the same file (24615ee8…6488). Its I/O (`x` [N, 1, 160000] -> `y` [N, 589, 7]) is what `npm run models:test`'s own
 *   conversion of the same weights (scripts/models/segmentation-to-onnx.py) has, so the tests cover it.
 * - `license` is the weights' licence as their publishers state it, where recorded.
 * An entry with neither digest is verified by size only; pulling it warns.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';

/**
 * What a catalog file is for: a whisper model, a Silero VAD, a Piper voice model, a Piper voice config, a
 * speaker-embedding model (for diarization and speaker recognition) or a speaker segmentation model (who talks in
 * each frame of a 10 s chunk, overlaps included).
 */
export type ModelKind =
  | 'whisper'
  | 'vad'
  | 'piper-voice'
  | 'piper-config'
  | 'speaker-embedding'
  | 'speaker-segmentation';

/** Curated facts about a Piper voice that its config does not carry. */
export interface CatalogVoice {
  /** Voice id without the quality (`en_US-lessac`), as `listVoices()` reports it. */
  readonly id: string;
  readonly quality: 'x_low' | 'low' | 'medium' | 'high';
  /** `neutral` for multi-speaker voices whose speakers are of both genders. */
  readonly gender: 'female' | 'male' | 'neutral';
}

/**
 * The I/O contract of a speaker-embedding model: it takes float32 features [N, T, featureDim], Kaldi-style log-mel
 * filterbanks (25 ms windows every 10 ms) of audio at `sampleRate`, and returns embeddings [N, dim].
 */
export interface CatalogEmbedding {
  readonly sampleRate: number;
  /** Mel bins per frame. */
  readonly featureDim: number;
  /** Size of one embedding. */
  readonly dim: number;
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
  /** Speaker-embedding models: what goes in and what comes out. */
  readonly embedding?: CatalogEmbedding;
  /** The licence of the file's weights (SPDX id), where the catalog records it. */
  readonly license?: string;
  /** One line for humans. */
  readonly description: string;
}

/** A validated catalog. */
export interface Catalog {
  readonly models: readonly CatalogEntry[];
  /** Service ids (`svc-stt-1`, `svc-stt-1-flash`, `vad`) mapped to catalog ids. */
  readonly defaults: Readonly<Record<string, string>>;
}

const MODEL_KINDS: readonly ModelKind[] = [
  'whisper',
  'vad',
  'piper-voice',
  'piper-config',
  'speaker-embedding',
  'speaker-segmentation',
];
const VOICE_QUALITIES = ['x_low', 'low', 'medium', 'high'] as const;
const VOICE_GENDERS = ['female', 'male', 'neutral'] as const;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;
const SHA1_PATTERN = /^[0-9a-f]{40}$/;
// A name that cannot climb out of the models directory or hide as a dot file.
const FILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// Files may also hold '+' (upstream's `wespeaker_en_voxceleb_CAM++.onnx`); ids stay plain for command lines.
const FILE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

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
  const { kind, file, url, bytes, sha256, sha1, multilingual, description, companions, voice, embedding, license } =
    value;
  if (!MODEL_KINDS.includes(kind as ModelKind)) {
    throw new InvalidOptionValueError(`${at}.kind`, `one of ${MODEL_KINDS.join(', ')}`, kind);
  }
  if (typeof file !== 'string' || !FILE_PATTERN.test(file)) {
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
  if (license !== undefined && (typeof license !== 'string' || license.length === 0)) {
    throw new InvalidOptionTypeError(`${at}.license`, 'a licence id (string) or absent', license);
  }
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
  const checkedEmbedding = embedding === undefined ? undefined : validateEmbedding(`${at}.embedding`, embedding);
  if (kind === 'speaker-embedding' && checkedEmbedding === undefined) {
    throw new InvalidOptionTypeError(
      `${at}.embedding`,
      '{ sampleRate, featureDim, dim } for a speaker-embedding model',
      embedding,
    );
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
    ...(checkedEmbedding === undefined ? {} : { embedding: checkedEmbedding }),
    ...(typeof license === 'string' ? { license } : {}),
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

// Wide enough for any model of this family, narrow enough to catch a swapped or mistyped field.
const EMBEDDING_LIMITS = { sampleRate: [8000, 48000], featureDim: [1, 512], dim: [1, 8192] } as const;

function validateEmbedding(where: string, value: unknown): CatalogEmbedding {
  if (!isRecord(value)) throw new InvalidOptionTypeError(where, 'an object', value);
  const checked: Record<string, number> = {};
  for (const [field, [min, max]] of Object.entries(EMBEDDING_LIMITS)) {
    const n = value[field];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidOptionValueError(`${where}.${field}`, `an integer from ${min} to ${max}`, n);
    }
    checked[field] = n;
  }
  return Object.freeze(checked as unknown as CatalogEmbedding);
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
