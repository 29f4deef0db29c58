// pullModel over HTTP against a local server: full download, resume, Range ignored, redirects, failures, abort.
import { existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { ChecksumMismatchError, DownloadError, Sha1MismatchError } from '../../src/errors.js';
import { type PullOptions, type PullProgress, pullModel } from '../../src/models/store.js';
import {
  type Handler,
  randomModel,
  sendFile,
  sha1,
  startServer,
  type TempDir,
  type TestServer,
  tempDir,
  testEntry,
} from './models-test-server.js';

const data = randomModel();
const FILE = 'ggml-test.bin';

let dir: TempDir;
let server: TestServer | undefined;

beforeEach(async () => {
  dir = await tempDir();
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  await dir.remove();
});

async function serve(handler: Handler): Promise<TestServer> {
  server = await startServer(handler);
  return server;
}

const finalPath = (): string => join(dir.path, FILE);
const partPath = (): string => `${finalPath()}.part`;
// Tests fail fast instead of waiting out production timeouts and back-off; the timeouts that must not fire grow with
// this machine's slowdown (the tests that make them fire set their own).
const quick: PullOptions = {
  retries: 0,
  retryDelayMs: 0,
  connectTimeoutMs: scaledMs(5_000),
  idleTimeoutMs: scaledMs(5_000),
};

describe('pullModel over HTTP', () => {
  it('downloads, reports progress, verifies the sha256 and leaves only the final file', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data));
    const progress: PullProgress[] = [];
    const result = await pullModel(testEntry(data, `${base}/${FILE}`), {
      ...quick,
      dir: dir.path,
      onProgress: (p) => progress.push(p),
    });

    expect(result).toMatchObject({ path: finalPath(), alreadyInstalled: false, verifiedBy: 'sha256', resumedFrom: 0 });
    expect(result.sha256).toBe(testEntry(data, '').sha256);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
    expect(existsSync(partPath())).toBe(false);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.range).toBeUndefined();
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual({ receivedBytes: data.length, totalBytes: data.length });
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i]!.receivedBytes).toBeGreaterThanOrEqual(progress[i - 1]!.receivedBytes);
    }
  });

  it('keeps the .part when the connection drops and resumes it with a Range request', async () => {
    const cut = 1024 * 1024;
    const { base, requests } = await serve((req, res, count) =>
      sendFile(req, res, data, count === 0 ? { cutAfter: cut } : {}),
    );
    const entry = testEntry(data, `${base}/${FILE}`);

    await expect(pullModel(entry, { ...quick, dir: dir.path })).rejects.toBeInstanceOf(DownloadError);
    expect(existsSync(finalPath())).toBe(false);
    const kept = (await stat(partPath())).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(data.length);

    const result = await pullModel(entry, { ...quick, dir: dir.path });
    expect(requests).toHaveLength(2);
    expect(requests[1]?.range).toBe(`bytes=${kept}-`);
    expect(result.resumedFrom).toBe(kept);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
    expect(existsSync(partPath())).toBe(false);
  });

  it('retries a dropped connection by itself, resuming where it broke off', async () => {
    const { base, requests } = await serve((req, res, count) =>
      sendFile(req, res, data, count === 0 ? { cutAfter: 700_000 } : {}),
    );
    const result = await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, retries: 2, dir: dir.path });

    expect(requests).toHaveLength(2);
    expect(requests[1]?.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect(result.resumedFrom).toBe(0); // the resumed bytes were this pull's own
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });

  it('starts over when the server ignores Range and answers 200', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data, { ignoreRange: true }));
    // A stale part whose bytes are wrong: appending the 200 body to it would fail the checksum.
    await writeFile(partPath(), Buffer.alloc(1000, 7));

    const result = await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path });
    expect(requests).toHaveLength(1);
    expect(requests[0]?.range).toBe('bytes=1000-');
    expect(result.resumedFrom).toBe(0);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });

  it('starts over when a 206 answer covers another range than the one asked for', async () => {
    const { base, requests } = await serve((req, res) => {
      if (req.headers.range === undefined) sendFile(req, res, data);
      else res.writeHead(206, { 'content-range': `bytes 0-99/${data.length}` }).end(data.subarray(0, 100));
    });
    await writeFile(partPath(), data.subarray(0, 5000));

    await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path });
    expect(requests.map((r) => r.range)).toEqual(['bytes=5000-', undefined]);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });

  it('throws away a resumed part that fails the checksum and downloads afresh once', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data));
    await writeFile(partPath(), Buffer.alloc(1000, 7));

    await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path });
    expect(requests.map((r) => r.range)).toEqual(['bytes=1000-', undefined]);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });

  it('fails with a DownloadError naming the URL and the status on 404, and does not retry', async () => {
    const { base, requests } = await serve((_req, res) => res.writeHead(404, 'Not Found').end());
    const url = `${base}/${FILE}`;
    const error = await pullModel(testEntry(data, url), { ...quick, retries: 3, dir: dir.path }).catch((e) => e);

    expect(error).toBeInstanceOf(DownloadError);
    expect(error.code).toBe('DOWNLOAD_FAILED');
    expect(error.message).toContain(url);
    expect(error.message).toContain('404');
    expect(requests).toHaveLength(1);
    expect(existsSync(finalPath())).toBe(false);
    expect(existsSync(partPath())).toBe(false);
  });

  it('retries a 500 and gives up after the configured attempts', async () => {
    const { base, requests } = await serve((_req, res) => res.writeHead(500).end());
    const error = await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, retries: 2, dir: dir.path }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(DownloadError);
    expect(error.message).toContain('500');
    expect(requests).toHaveLength(3);
  });

  it('rejects a checksum mismatch: ChecksumMismatchError, no final file, no .part', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data));
    const other = randomModel(data.length);
    const entry = testEntry(other, `${base}/${FILE}`);
    const error = await pullModel(entry, { ...quick, dir: dir.path }).catch((e) => e);

    expect(error).toBeInstanceOf(ChecksumMismatchError);
    expect(error.expected).toBe(entry.sha256);
    expect(error.actual).toBe(testEntry(data, '').sha256);
    expect(existsSync(finalPath())).toBe(false);
    expect(existsSync(partPath())).toBe(false);
  });

  it('refuses a file whose announced size differs from the catalog before writing it', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data));
    const entry = testEntry(data, `${base}/${FILE}`, { bytes: data.length + 1 });
    await expect(pullModel(entry, { ...quick, dir: dir.path })).rejects.toThrow(/serves \d+ bytes/);
    expect(existsSync(partPath())).toBe(false);
    expect(existsSync(finalPath())).toBe(false);
  });

  it('stops a chunked body that runs past the catalog size and deletes the part', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data, { chunked: true }));
    const entry = testEntry(data, `${base}/${FILE}`, { bytes: data.length - 10 });
    await expect(pullModel(entry, { ...quick, dir: dir.path })).rejects.toThrow(/sent more than/);
    expect(existsSync(partPath())).toBe(false);
  });

  it('follows a redirect to another path', async () => {
    const { base, requests } = await serve((req, res) => {
      if (req.url === `/${FILE}`) res.writeHead(302, { location: `/cdn/${FILE}?sig=1` }).end();
      else sendFile(req, res, data);
    });
    await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path });
    expect(requests.map((r) => r.path)).toEqual([`/${FILE}`, `/cdn/${FILE}?sig=1`]);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });

  it('gives up after maxRedirects', async () => {
    const { base, requests } = await serve((_req, res) => res.writeHead(302, { location: `/${FILE}` }).end());
    const pull = pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, maxRedirects: 3, dir: dir.path });
    await expect(pull).rejects.toThrow(/more than 3 redirects/);
    expect(requests).toHaveLength(4);
  });

  it('aborts mid-transfer with the signal reason and installs nothing', async () => {
    await serve((req, res) => sendFile(req, res, data, { stallAfter: 512 * 1024 }));
    const controller = new AbortController();
    const reason = new Error('user gave up');
    const pull = pullModel(testEntry(data, `${server!.base}/${FILE}`), {
      ...quick,
      retries: 3,
      dir: dir.path,
      signal: controller.signal,
      onProgress: ({ receivedBytes }) => {
        if (receivedBytes > 0) controller.abort(reason);
      },
    });
    await expect(pull).rejects.toBe(reason);
    expect(existsSync(finalPath())).toBe(false);
    expect(server!.requests).toHaveLength(1);
  });

  it('rejects with the reason of an already aborted signal without a request', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data));
    const reason = new Error('too late');
    const pull = pullModel(testEntry(data, `${base}/${FILE}`), { dir: dir.path, signal: AbortSignal.abort(reason) });
    await expect(pull).rejects.toBe(reason);
    expect(requests).toHaveLength(0);
  });

  it('times out a silent server with a DownloadError and keeps the part for a later resume', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data, { stallAfter: 100_000 }));
    const pull = pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, idleTimeoutMs: 300, dir: dir.path });
    await expect(pull).rejects.toThrow(/timed out/);
    expect((await stat(partPath())).size).toBe(100_000);
    expect(existsSync(finalPath())).toBe(false);
  });

  it('times out a server that accepts the connection but never answers', async () => {
    const { base } = await serve(() => {});
    const pull = pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, connectTimeoutMs: 200, dir: dir.path });
    await expect(pull).rejects.toThrow(/timed out: no response in 200 ms/);
    expect(existsSync(partPath())).toBe(false);
  });

  it('downloads from a base URL given as `from` instead of the entry URL', async () => {
    const { base, requests } = await serve((req, res) => {
      if (req.url === `/mirror/${FILE}`) sendFile(req, res, data);
      else res.writeHead(404).end();
    });
    const result = await pullModel(testEntry(data, `${base}/upstream/${FILE}`), {
      ...quick,
      dir: dir.path,
      from: `${base}/mirror`,
    });
    expect(requests.map((r) => r.path)).toEqual([`/mirror/${FILE}`]);
    expect(result.source).toBe(`${base}/mirror/${FILE}`);
  });

  it('verifies by size only when no digest is known, and warns', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data));
    const warnings: string[] = [];
    const result = await pullModel(testEntry(data, `${base}/${FILE}`, { sha256: null }), {
      ...quick,
      dir: dir.path,
      onWarning: (message) => warnings.push(message),
    });
    expect(result.verifiedBy).toBe('size');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/size only/);
  });

  it('verifies with SHA-1 when that is the only digest published', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data));
    const entry = testEntry(data, `${base}/${FILE}`, { sha256: null, sha1: sha1(data) });
    const result = await pullModel(entry, { ...quick, dir: dir.path, onWarning: () => {} });
    expect(result.verifiedBy).toBe('sha1');
  });

  it('rejects a SHA-1 mismatch as a ChecksumMismatchError naming sha1', async () => {
    const { base } = await serve((req, res) => sendFile(req, res, data));
    const entry = testEntry(data, `${base}/${FILE}`, { sha256: null, sha1: sha1(Buffer.from('other')) });
    const error = await pullModel(entry, { ...quick, dir: dir.path }).catch((e) => e);
    expect(error).toBeInstanceOf(Sha1MismatchError);
    expect(error).toBeInstanceOf(ChecksumMismatchError);
    expect(error.message).toMatch(/^sha1 of ggml-test.bin/);
    expect(existsSync(finalPath())).toBe(false);
    expect(existsSync(partPath())).toBe(false);
  });

  it('does not transfer a model that is already installed', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data));
    await writeFile(finalPath(), data);
    const result = await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path });
    expect(result).toMatchObject({ alreadyInstalled: true, verifiedBy: 'size', sha256: null });
    expect(requests).toHaveLength(0);
  });

  it('with verify, replaces an installed file whose bytes are wrong', async () => {
    const { base, requests } = await serve((req, res) => sendFile(req, res, data));
    await writeFile(finalPath(), Buffer.alloc(data.length, 1));
    const result = await pullModel(testEntry(data, `${base}/${FILE}`), { ...quick, dir: dir.path, verify: true });
    expect(result).toMatchObject({ alreadyInstalled: false, verifiedBy: 'sha256' });
    expect(requests).toHaveLength(1);
    expect((await readFile(finalPath())).equals(data)).toBe(true);
  });
});
