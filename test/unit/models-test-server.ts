// A local HTTP server on 127.0.0.1 for the model download tests: it records every request and serves a buffer
// the way the test asks (honouring Range or not, cutting the connection, stalling).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CatalogEntry } from '../../src/models/catalog.js';

export interface RecordedRequest {
  readonly path: string;
  readonly range: string | undefined;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** `count` is the number of requests before this one. */
export type Handler = (request: IncomingMessage, response: ServerResponse, count: number) => void;

export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((request, response) => {
    const count = requests.length;
    requests.push({ path: request.url ?? '', range: request.headers.range });
    handler(request, response, count);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        // Stalled responses keep their sockets open; close them or close() waits forever.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface SendOptions {
  /** Answer 200 with the whole file even when a Range was asked for. */
  readonly ignoreRange?: boolean;
  /** Send this many body bytes, then drop the connection. */
  readonly cutAfter?: number;
  /** Send this many body bytes, then go silent without ending. */
  readonly stallAfter?: number;
  /** Omit Content-Length (chunked encoding). */
  readonly chunked?: boolean;
}

/** Serves `data` honouring `Range: bytes=N-` unless told otherwise. */
export function sendFile(request: IncomingMessage, response: ServerResponse, data: Buffer, options: SendOptions = {}) {
  const match = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
  let start = 0;
  if (match && !options.ignoreRange) {
    start = Number(match[1]);
    if (start >= data.length) {
      response.writeHead(416, { 'content-range': `bytes */${data.length}` }).end();
      return;
    }
    response.writeHead(206, {
      'content-range': `bytes ${start}-${data.length - 1}/${data.length}`,
      ...(options.chunked ? {} : { 'content-length': String(data.length - start) }),
    });
  } else {
    response.writeHead(200, options.chunked ? {} : { 'content-length': String(data.length) });
  }
  const body = data.subarray(start);
  if (options.cutAfter !== undefined) {
    response.write(body.subarray(0, options.cutAfter), () => response.socket?.destroy());
  } else if (options.stallAfter !== undefined) {
    response.write(body.subarray(0, options.stallAfter));
  } else {
    response.end(body);
  }
}

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
export const sha1 = (data: Buffer): string => createHash('sha1').update(data).digest('hex');

/** A few MB of random bytes: big enough for many chunks, a cut midway and a resume. */
export const randomModel = (bytes = 3 * 1024 * 1024 + 123): Buffer => randomBytes(bytes);

/** A catalog entry for `data`, injected instead of a real one. */
export function testEntry(data: Buffer, url: string, overrides: Partial<CatalogEntry> = {}): CatalogEntry {
  return {
    id: 'test-model',
    kind: 'whisper',
    file: 'ggml-test.bin',
    url,
    bytes: data.length,
    sha256: sha256(data),
    multilingual: true,
    description: 'random bytes for tests',
    ...overrides,
  };
}

export interface TempDir {
  readonly path: string;
  remove(): Promise<void>;
}

export async function tempDir(): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), 'voxmill-models-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
