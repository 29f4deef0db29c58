/**
 * The model store: where model files live on this machine, whether one is installed, and pulling one in.
 *
 * A pulled file reaches its final name only after its size and digest match the catalog: bytes land in
 * `<file>.part` beside it, are fsynced, and are renamed into place (atomic within one directory).
 */
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ChecksumMismatchError,
  DownloadError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  ModelNotFoundError,
} from '../errors.js';
import { type CatalogEntry, catalogDefaults, findCatalogEntry, listCatalog, validateCatalogEntry } from './catalog.js';
import { checkDigests, digestFile, type VerifiedBy } from './digest.js';
import { downloadToPart, type PartResult, type PullProgress, type TransferContext } from './download.js';
import { copyToPart } from './mirror.js';

export type { VerifiedBy } from './digest.js';
export type { PullProgress } from './download.js';

/** Options of {@link pullModel}. */
export interface PullOptions {
  /** Models directory; default {@link defaultModelsDir}. Created when missing. */
  readonly dir?: string;
  /**
   * Where to get the file instead of the entry's URL: a base URL (`https://mirror.example/whisper/`) under which
   * the same file names are served, or a local directory (path or `file:` URL) holding them.
   */
  readonly from?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: PullProgress) => void;
  /**
   * Re-hash a file already installed instead of trusting its size (default false). A file that fails is replaced
   * by a fresh pull; it stays in place until the replacement is verified. Downloads are always verified.
   */
  readonly verify?: boolean;
  /** Receives warnings (a model with no published digest); default `process.emitWarning`. */
  readonly onWarning?: (message: string) => void;
  /** Time to connect and get response headers, per request; default 30 000 ms. */
  readonly connectTimeoutMs?: number;
  /** Longest silence from the server mid-transfer; default 60 000 ms. */
  readonly idleTimeoutMs?: number;
  /** Default 5. Hugging Face redirects once, to its CDN. */
  readonly maxRedirects?: number;
  /** Further attempts after a network failure, timeout or 5xx, each resuming the part file; default 3. */
  readonly retries?: number;
  /** Wait before retry n is n times this; default 1 000 ms. */
  readonly retryDelayMs?: number;
}

/** What {@link pullModel} did. */
export interface PullResult {
  readonly entry: CatalogEntry;
  /** The installed file. */
  readonly path: string;
  /** The URL or mirror file it came from (the one it would have come from, when already installed). */
  readonly source: string;
  /** True when the file was already installed and nothing was transferred. */
  readonly alreadyInstalled: boolean;
  /** How the file was judged correct: its sha256, its SHA-1, or only its size. */
  readonly verifiedBy: VerifiedBy;
  /** sha256 of the installed file; null when an installed file was trusted without hashing. */
  readonly sha256: string | null;
  /** Bytes reused from a `.part` left by an earlier, interrupted pull. */
  readonly resumedFrom: number;
}

/**
 * Where models are kept by default: `$VOXMILL_MODELS_DIR`, else `$XDG_CACHE_HOME/voxmill/models`, else
 * `~/.cache/voxmill/models`. Not inside the package: node_modules may be read-only, is wiped by reinstalls and is
 * duplicated per project, while hundreds of megabytes of weights should be downloaded once per user.
 */
export function defaultModelsDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.VOXMILL_MODELS_DIR;
  if (explicit) return resolve(explicit);
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  const cache = env.XDG_CACHE_HOME;
  if (cache && isAbsolute(cache)) return join(cache, 'voxmill', 'models');
  return join(homedir(), '.cache', 'voxmill', 'models');
}

/** Where an entry's file lives once installed in `dir`. */
export function installedPath(entry: CatalogEntry, dir: string = defaultModelsDir()): string {
  return join(resolve(dir), entry.file);
}

/** Whether the entry's file exists in `dir` with the catalog's size (the digest is checked at pull time). */
export async function isInstalled(entry: CatalogEntry, dir: string = defaultModelsDir()): Promise<boolean> {
  try {
    const info = await stat(installedPath(entry, dir));
    return info.isFile() && info.size === entry.bytes;
  } catch {
    return false;
  }
}

/**
 * A catalog entry from a catalog id, a service id (`svc-stt-1`, `vad`; see the catalog's defaults), or an entry
 * object (validated; lets callers and tests use files outside the packaged catalog).
 * @throws ModelNotFoundError for an unknown id.
 */
export function resolveModelEntry(model: string | CatalogEntry): CatalogEntry {
  if (typeof model === 'object' && model !== null) return validateCatalogEntry(model, 'model');
  if (typeof model !== 'string') throw new InvalidOptionTypeError('model', 'a model id or a catalog entry', model);
  const entry = findCatalogEntry(model) ?? findCatalogEntry(catalogDefaults()[model] ?? '');
  if (entry === undefined) {
    const known = listCatalog()
      .map((candidate) => candidate.id)
      .join(', ');
    throw new ModelNotFoundError(`unknown model "${model}"; the catalog has: ${known}`);
  }
  return entry;
}

/**
 * Makes the model available in the models directory: downloads it (resuming a `.part` left by an interrupted
 * pull) or copies it from a mirror, verifies it, and renames it into place. Does nothing when it is installed.
 * A download that fails or is aborted leaves `<file>.part` for the next pull to resume; a part that fails
 * verification, and a failed mirror copy, are deleted.
 * @throws ModelNotFoundError, DownloadError, ChecksumMismatchError; `signal.reason` when aborted.
 */
export async function pullModel(model: string | CatalogEntry, options: PullOptions = {}): Promise<PullResult> {
  const entry = resolveModelEntry(model);
  const settings = checkOptions(options);
  settings.signal?.throwIfAborted();
  await mkdir(settings.dir, { recursive: true });
  const path = installedPath(entry, settings.dir);
  const source = resolveSource(entry, settings.from);
  const result = { entry, path, source: source.location, alreadyInstalled: true, resumedFrom: 0 };

  if (await isInstalled(entry, settings.dir)) {
    if (!settings.verify) return { ...result, verifiedBy: 'size', sha256: null };
    const digests = await digestFile(entry, path, entry.bytes, settings.signal);
    try {
      return { ...result, verifiedBy: checkDigests(entry, digests), sha256: digests.sha256 };
    } catch (error) {
      if (!(error instanceof ChecksumMismatchError)) throw error;
    }
  }
  if (entry.sha256 === null && typeof entry.sha1 !== 'string') {
    settings.onWarning(`${entry.id}: no published sha256 or sha1 for ${entry.file}; it is verified by size only`);
  }

  const part = `${path}.part`;
  let transfer = await transferToPart(entry, source, part, settings);
  let verifiedBy: VerifiedBy;
  try {
    verifiedBy = await install(entry, part, path, transfer);
  } catch (error) {
    // Bytes kept from an earlier pull may be the bad ones (an upstream file replaced since): one fresh try.
    if (!(error instanceof ChecksumMismatchError) || transfer.resumedFrom === 0) throw error;
    transfer = await transferToPart(entry, source, part, settings);
    verifiedBy = await install(entry, part, path, transfer);
  }
  return {
    ...result,
    alreadyInstalled: false,
    verifiedBy,
    sha256: transfer.digests.sha256,
    resumedFrom: transfer.resumedFrom,
  };
}

type Source = { kind: 'url'; location: string } | { kind: 'dir'; location: string };

function resolveSource(entry: CatalogEntry, from: string | undefined): Source {
  if (from === undefined) return { kind: 'url', location: entry.url };
  if (/^https?:\/\//i.test(from)) {
    const base = from.endsWith('/') ? from : `${from}/`;
    return { kind: 'url', location: new URL(encodeURIComponent(entry.file), base).href };
  }
  const dir = from.startsWith('file:') ? fileURLToPath(from) : resolve(from);
  return { kind: 'dir', location: join(dir, entry.file) };
}

function transferToPart(
  entry: CatalogEntry,
  source: Source,
  part: string,
  context: TransferContext,
): Promise<PartResult> {
  return source.kind === 'url'
    ? downloadToPart(entry, source.location, part, context)
    : copyToPart(entry, source.location, part, context);
}

/** Checks the part file and renames it to its final name; deletes it when it fails. */
async function install(entry: CatalogEntry, part: string, path: string, transfer: PartResult): Promise<VerifiedBy> {
  let verifiedBy: VerifiedBy;
  try {
    const { size } = await stat(part);
    if (size !== entry.bytes) {
      throw new DownloadError(`${part} has ${size} bytes, but the catalog expects ${entry.bytes} for ${entry.id}`);
    }
    verifiedBy = checkDigests(entry, transfer.digests);
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
  await rename(part, path);
  await syncDirectory(dirname(path));
  return verifiedBy;
}

/** Makes the rename durable. Some platforms (Windows) and file systems cannot fsync a directory; that is fine. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort: the file itself was fsynced before the rename.
  }
}

interface Settings extends TransferContext {
  readonly dir: string;
  readonly from: string | undefined;
  readonly verify: boolean;
  readonly onWarning: (message: string) => void;
}

function checkOptions(options: PullOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionTypeError('options', 'an object', options);
  }
  const { dir, from, signal, onProgress, verify, onWarning } = options;
  if (dir !== undefined && (typeof dir !== 'string' || dir === '')) {
    throw new InvalidOptionTypeError('dir', 'a non-empty string', dir);
  }
  if (from !== undefined && (typeof from !== 'string' || from === '')) {
    throw new InvalidOptionTypeError('from', 'a base URL or a directory', from);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidOptionTypeError('signal', 'an AbortSignal', signal);
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new InvalidOptionTypeError('onProgress', 'a function', onProgress);
  }
  if (verify !== undefined && typeof verify !== 'boolean') {
    throw new InvalidOptionTypeError('verify', 'a boolean', verify);
  }
  if (onWarning !== undefined && typeof onWarning !== 'function') {
    throw new InvalidOptionTypeError('onWarning', 'a function', onWarning);
  }
  return {
    dir: dir ?? defaultModelsDir(),
    from,
    signal,
    onProgress,
    verify: verify ?? false,
    onWarning: onWarning ?? ((message) => process.emitWarning(message, { code: 'VOXMILL_MODEL_UNVERIFIED' })),
    connectTimeoutMs: integer('connectTimeoutMs', options.connectTimeoutMs, 30_000, 1),
    idleTimeoutMs: integer('idleTimeoutMs', options.idleTimeoutMs, 60_000, 1),
    maxRedirects: integer('maxRedirects', options.maxRedirects, 5, 0),
    retries: integer('retries', options.retries, 3, 0),
    retryDelayMs: integer('retryDelayMs', options.retryDelayMs, 1_000, 0),
  };
}

function integer(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new InvalidOptionTypeError(name, 'a number', value);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionValueError(name, `an integer >= ${min}`, value);
  }
  return value;
}
