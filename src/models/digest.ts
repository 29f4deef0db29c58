/**
 * Digests of a model file, computed while its bytes stream past, and their comparison with the catalog.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { ChecksumMismatchError, Sha1MismatchError } from '../errors.js';
import type { CatalogEntry } from './catalog.js';

/** How a file was judged to be the catalog's file. */
export type VerifiedBy = 'sha256' | 'sha1' | 'size';

/** Hashes what it is fed: sha256 always (it is reported), SHA-1 only when the entry has no sha256 but a SHA-1. */
export class FileDigest {
  readonly #needsSha1: boolean;
  #sha256: Hash;
  #sha1: Hash | undefined;

  constructor(entry: CatalogEntry) {
    this.#needsSha1 = entry.sha256 === null && typeof entry.sha1 === 'string';
    this.#sha256 = createHash('sha256');
    this.#sha1 = this.#needsSha1 ? createHash('sha1') : undefined;
  }

  update(chunk: Buffer): void {
    this.#sha256.update(chunk);
    this.#sha1?.update(chunk);
  }

  /** Forgets everything fed so far (the server restarted from byte 0). */
  reset(): void {
    this.#sha256 = createHash('sha256');
    this.#sha1 = this.#needsSha1 ? createHash('sha1') : undefined;
  }

  /** Feeds the first `length` bytes of a file (the part downloaded before). */
  async updateFromFile(path: string, length: number, signal?: AbortSignal): Promise<void> {
    if (length === 0) return;
    const stream = createReadStream(path, { start: 0, end: length - 1, ...(signal ? { signal } : {}) });
    for await (const chunk of stream) this.update(chunk as Buffer);
  }

  /** Final hex digests; the object cannot be fed afterwards. */
  digest(): { sha256: string; sha1: string | null } {
    return { sha256: this.#sha256.digest('hex'), sha1: this.#sha1?.digest('hex') ?? null };
  }
}

/**
 * Compares digests with the entry: sha256 when the catalog has it, else SHA-1, else nothing (size only).
 * @throws ChecksumMismatchError (Sha1MismatchError for SHA-1) on a mismatch.
 */
export function checkDigests(entry: CatalogEntry, actual: { sha256: string; sha1: string | null }): VerifiedBy {
  if (entry.sha256 !== null) {
    if (actual.sha256 !== entry.sha256) throw new ChecksumMismatchError(entry.file, entry.sha256, actual.sha256);
    return 'sha256';
  }
  if (typeof entry.sha1 === 'string') {
    if (actual.sha1 !== entry.sha1)
      throw new Sha1MismatchError(entry.file, entry.sha1, actual.sha1 ?? '(not computed)');
    return 'sha1';
  }
  return 'size';
}

/** Hashes a whole file (an installed model being re-verified). */
export async function digestFile(
  entry: CatalogEntry,
  path: string,
  bytes: number,
  signal?: AbortSignal,
): Promise<{ sha256: string; sha1: string | null }> {
  const digest = new FileDigest(entry);
  await digest.updateFromFile(path, bytes, signal);
  return digest.digest();
}
