// Streams the multipart form of POST /v1/transcriptions through busboy: a few short text fields and exactly one
// audio file, held in memory (default) or spooled to a private temporary file, within the size limit.
import { randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { type AudioContainer, SNIFF_BYTES, sniffAudioContainer } from './audio-sniff.js';
import { HttpError } from './http-error.js';
import { bodyAlreadyRead, bodyConsumedError, parsedBody, requireMediaType } from './json-body.js';

/** The uploaded audio: in memory, or at `path` (which the caller removes with `dispose()`). */
export interface Upload {
  data: Buffer | undefined;
  path: string | undefined;
  size: number;
  container: AudioContainer;
  /** Removes the temporary file, if any. Safe to call more than once. */
  dispose(): Promise<void>;
}

export interface TranscriptionForm {
  fields: Map<string, string>;
  /** The values of each `listFields` field, in order (absent when not sent). */
  lists: Map<string, string[]>;
  file: Upload | undefined;
}

export interface FormLimits {
  fieldNames: readonly string[];
  /** Fields that may repeat (OpenAI's SDKs send `timestamp_granularities[]` once per value), each at most 16 times. */
  listFields?: readonly string[];
  /** Longest text field, in bytes. Default 1024. */
  maxFieldBytes?: number;
  /**
   * Per-field exceptions to `maxFieldBytes` and to the 16 values of a list field (audio data URLs are longer), and a
   * cap on the bytes of all of a list field's values together.
   */
  fieldLimits?: Readonly<Record<string, { maxBytes?: number; maxValues?: number; maxTotalBytes?: number }>>;
  fileField: string;
  maxFileBytes: number;
  audioFormats: readonly AudioContainer[];
  uploadDir: string | undefined;
  signal: AbortSignal;
}

/** Text fields are short enums and codes; anything longer is a client bug, not a value to truncate. */
const MAX_FIELD_BYTES = 1024;
/** Values one list field may carry. */
const MAX_LIST_VALUES = 16;

class FileSink {
  readonly #chunks: Buffer[] = [];
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  readonly #stream: WriteStream | undefined;
  readonly path: string | undefined;
  size = 0;
  container: AudioContainer | undefined;
  #removed: Promise<void> | undefined;

  constructor(
    private readonly file: Readable,
    private readonly limits: FormLimits,
    private readonly fail: (error: HttpError) => void,
  ) {
    if (limits.uploadDir) {
      this.path = join(limits.uploadDir, `voxmill-upload-${randomUUID()}`);
      // Private to this process's user, and never an existing file.
      this.#stream = createWriteStream(this.path, { flags: 'wx', mode: 0o600 });
      // The message stays generic (no server paths); the cause carries the details for the host's logs.
      this.#stream.on('error', (cause) =>
        this.fail(new HttpError(500, 'upload_spool_failed', 'the upload could not be stored', { cause })),
      );
      this.#stream.on('drain', () => file.resume());
    }
  }

  /** Takes one chunk; false when the upload must stop (wrong format). */
  push(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.container === undefined && !this.#sniff(chunk)) return false;
    if (this.#stream) {
      if (!this.#stream.write(chunk)) this.file.pause();
    } else {
      this.#chunks.push(chunk);
    }
    return true;
  }

  #sniff(chunk: Buffer): boolean {
    this.#head.push(chunk);
    this.#headBytes += chunk.length;
    if (this.#headBytes < SNIFF_BYTES) return true;
    return this.decide();
  }

  /** Names the container from the bytes seen; false (and a 415) when it is not an accepted one. */
  decide(): boolean {
    if (this.container !== undefined) return true;
    if (this.#headBytes === 0) {
      this.fail(new HttpError(400, 'audio_empty', 'the file is empty', { param: this.limits.fileField }));
      return false;
    }
    const found = sniffAudioContainer(Buffer.concat(this.#head));
    if (found === undefined || !this.limits.audioFormats.includes(found)) {
      const what = found ? `${found} audio` : 'not audio in a format this API reads';
      this.fail(
        new HttpError(
          415,
          'unsupported_audio_format',
          `the file is ${what}; accepted formats: ${this.limits.audioFormats.join(', ')} (the handler's audioFormats option)`,
          { param: this.limits.fileField },
        ),
      );
      return false;
    }
    this.container = found;
    return true;
  }

  /** Waits for the spooled file to be fully written. */
  async finish(): Promise<void> {
    const stream = this.#stream;
    if (!stream) return;
    await new Promise<void>((resolve, reject) => {
      stream.once('error', reject);
      stream.end(resolve);
    });
  }

  toUpload(): Upload {
    return {
      data: this.#stream ? undefined : Buffer.concat(this.#chunks, this.size),
      path: this.path,
      size: this.size,
      container: this.container as AudioContainer,
      dispose: () => this.remove(),
    };
  }

  remove(): Promise<void> {
    this.#removed ??= (async () => {
      if (!this.path) return;
      const stream = this.#stream;
      if (stream && !stream.closed) {
        stream.destroy();
        await new Promise<void>((resolve) => stream.once('close', () => resolve()));
      }
      await rm(this.path, { force: true });
    })();
    return this.#removed;
  }
}

/**
 * Parses the form. Rejects with an HttpError naming the part at fault: not multipart (415), malformed (400),
 * an unknown, repeated or over-long field (400), no file or more than one (400), a file over the limit (413), a
 * file that is not an accepted audio container (415). On rejection nothing is left on disk and the rest of the
 * body is discarded.
 */
export async function readTranscriptionForm(req: IncomingMessage, limits: FormLimits): Promise<TranscriptionForm> {
  requireMediaType(req, 'multipart/form-data', (type) => type === 'multipart/form-data');
  // A raw body parser (express.raw) in front of the handler left the bytes: the form is read from them.
  let body: Readable = req;
  if (bodyAlreadyRead(req)) {
    const parsed = parsedBody(req);
    if (parsed === undefined || !('bytes' in parsed) || parsed.text) throw bodyConsumedError();
    body = Readable.from([parsed.bytes]);
  }
  const listFields = limits.listFields ?? [];
  const maxFieldBytes = limits.maxFieldBytes ?? MAX_FIELD_BYTES;
  const fieldLimits = limits.fieldLimits ?? {};
  const bytesOf = (name: string) => fieldLimits[name]?.maxBytes ?? maxFieldBytes;
  const valuesOf = (name: string) => fieldLimits[name]?.maxValues ?? MAX_LIST_VALUES;
  const maxFields = limits.fieldNames.length + listFields.reduce((sum, name) => sum + valuesOf(name), 0);
  // busboy truncates every field at one size: the largest allowed; each field's own limit is checked on arrival.
  const busboyFieldBytes = Math.max(maxFieldBytes, ...Object.values(fieldLimits).map((l) => l.maxBytes ?? 0));
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: {
        fieldSize: busboyFieldBytes,
        fields: maxFields,
        files: 1,
        parts: maxFields + 1,
        // busboy signals the limit on reaching it; one byte more means "over the limit".
        fileSize: limits.maxFileBytes + 1,
      },
    });
  } catch (error) {
    throw new HttpError(400, 'invalid_multipart', `the multipart body cannot be read: ${(error as Error).message}`);
  }

  const fields = new Map<string, string>();
  const lists = new Map<string, string[]>();
  let sink: FileSink | undefined;
  let settled = false;

  return new Promise<TranscriptionForm>((resolve, reject) => {
    let currentFile: Readable | undefined;
    const fail = (error: HttpError) => {
      if (settled) return;
      settled = true;
      limits.signal.removeEventListener('abort', onAbort);
      body.unpipe(parser);
      parser.removeAllListeners();
      // busboy may still report the end of a form it no longer reads; nobody is listening for that any more. It
      // is not destroyed here: this may run inside its own 'limit' emit, which goes on to touch its file stream.
      parser.on('error', () => undefined);
      currentFile?.resume();
      // The handler discards (or cuts off) the unread rest of the body when it answers.
      const removed = sink ? sink.remove() : Promise.resolve();
      removed.then(
        () => reject(error),
        () => reject(error),
      );
    };
    const onAbort = () => fail(new HttpError(499, 'client_closed', 'the request was aborted'));
    // A request whose body a parser read is always `destroyed`; its client is gone when its socket is.
    if (limits.signal.aborted || (body === req ? req.destroyed : req.socket?.destroyed)) {
      reject(limits.signal.reason ?? new HttpError(499, 'client_closed', 'the request was aborted'));
      return;
    }
    limits.signal.addEventListener('abort', onAbort, { once: true });

    parser.on('field', (name, value, info) => {
      if (name === limits.fileField) {
        return fail(
          new HttpError(
            400,
            'invalid_type',
            `${name} must be a file upload (a part with a filename), not a text field`,
            {
              param: name,
            },
          ),
        );
      }
      if (info.valueTruncated || Buffer.byteLength(value) > bytesOf(name)) {
        return fail(
          new HttpError(400, 'invalid_value', `the form field ${name} is longer than ${bytesOf(name)} bytes`, {
            param: name,
          }),
        );
      }
      if (listFields.includes(name)) {
        const values = lists.get(name) ?? [];
        const maxTotalBytes = fieldLimits[name]?.maxTotalBytes;
        if (
          maxTotalBytes !== undefined &&
          values.reduce((sum, v) => sum + Buffer.byteLength(v), Buffer.byteLength(value)) > maxTotalBytes
        ) {
          return fail(
            new HttpError(
              400,
              'invalid_value',
              `the values of ${name} are longer than ${maxTotalBytes} bytes together`,
              {
                param: name,
              },
            ),
          );
        }
        if (values.length === valuesOf(name)) {
          return fail(
            new HttpError(400, 'invalid_value', `the form field ${name} is given more than ${valuesOf(name)} times`, {
              param: name,
            }),
          );
        }
        values.push(value);
        lists.set(name, values);
        return;
      }
      if (!limits.fieldNames.includes(name)) {
        const known = [...limits.fieldNames, ...listFields, limits.fileField].join(', ');
        return fail(
          new HttpError(400, 'unknown_parameter', `unknown form field "${name}"; known: ${known}`, { param: name }),
        );
      }
      if (fields.has(name)) {
        return fail(
          new HttpError(400, 'duplicate_parameter', `the form field ${name} is given twice`, { param: name }),
        );
      }
      fields.set(name, value);
    });
    parser.on('file', (name, file) => {
      // A form that ends inside the file makes busboy destroy the file stream with an error: answered, never thrown.
      file.on('error', (error: Error) =>
        fail(new HttpError(400, 'invalid_multipart', `the multipart body cannot be read: ${error.message}`)),
      );
      currentFile = file;
      if (name !== limits.fileField) {
        file.resume();
        return fail(
          new HttpError(
            400,
            'unknown_parameter',
            `files go in the form field "${limits.fileField}"; received "${name}"`,
            {
              param: name,
            },
          ),
        );
      }
      const current = new FileSink(file, limits, fail);
      sink = current;
      file.on('data', (chunk: Buffer) => {
        if (!settled && !current.push(chunk)) file.resume();
      });
      file.on('limit', () =>
        fail(
          new HttpError(413, 'file_too_large', `the file is larger than the limit of ${limits.maxFileBytes} bytes`, {
            param: limits.fileField,
          }),
        ),
      );
    });
    parser.on('filesLimit', () =>
      fail(new HttpError(400, 'too_many_files', 'exactly one file is accepted', { param: limits.fileField })),
    );
    const tooManyParts = () =>
      fail(new HttpError(400, 'too_many_parts', 'the form has more parts than the fields this API knows'));
    parser.on('fieldsLimit', tooManyParts);
    parser.on('partsLimit', tooManyParts);
    parser.on('error', (error: Error) =>
      fail(new HttpError(400, 'invalid_multipart', `the multipart body cannot be read: ${error.message}`)),
    );
    parser.on('close', () => {
      if (settled) return;
      if (sink && !sink.decide()) return;
      const done = sink ? sink.finish() : Promise.resolve();
      done.then(
        () => {
          if (settled) return;
          settled = true;
          limits.signal.removeEventListener('abort', onAbort);
          resolve({ fields, lists, file: sink?.toUpload() });
        },
        (cause: Error) => fail(new HttpError(500, 'upload_spool_failed', 'the upload could not be stored', { cause })),
      );
    });
    body.pipe(parser);
  });
}
