// Live speaker labels with real models: a generated two-speaker conversation (its own seed, not the files the live
// threshold was chosen on) streamed through createTranscriber({ diarize: true }) with the real tiny.en and GE2E; its
// finals' turns scored against the RTTM truth. The bound sits well above today's figure (BENCHMARKS.md, "Live speaker
// labels"): it catches a broken flow (labels missing, every utterance one speaker), not a point of DER. The same
// audio over /v1/realtime with session.voxmill.diarize shows the labels reach a socket client.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  createSpeech,
  createSpeechHandler,
  type LiveTranscriptionEvent,
  parseRttm,
  scoreDiarization,
} from '../../dist/index.js';
import { repoRoot, sharedModel } from '../helpers/paths.js';
import { requireRealModel } from '../helpers/real-models.js';
import { pcm16, readPcm16Wav } from '../helpers/wav.js';

const ge2e = requireRealModel('speaker-ge2e');
const tinyEn = requireRealModel('whisper-tiny.en');
const joe = requireRealModel('piper-joe-medium');
const dir = mkdtempSync(join(tmpdir(), 'voxmill-live-speakers-'));
const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Final = Extract<LiveTranscriptionEvent, { type: 'final' }>;

/** The real tiny.en and the real GE2E encoder. */
const engine = () =>
  createSpeech({
    vadModel,
    models: { 'svc-stt-1': tinyEn.path as string },
    diarization: { embeddingModel: ge2e.path as string },
  });

describe.skipIf(ge2e.skip || tinyEn.skip || joe.skip)('live speaker labels (real models)', () => {
  let name = '';
  beforeAll(async () => {
    await promisify(execFile)(process.execPath, [
      join(repoRoot, 'scripts/diarize-devset/make-devset.mjs'),
      ...['--seed', '11', '--per-count', '1', '--variants', 'clean', '--out', dir],
    ]);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { files: Array<{ name: string }> };
    name = manifest.files.find((f) => f.name.startsWith('conv-2spk'))?.name ?? '';
  }, 300_000);

  it('labels a two-speaker conversation: two speakers, DER under 30%, every word and turn labelled', async () => {
    const speech = engine();
    try {
      const samples = readPcm16Wav(join(dir, `${name}.wav`));
      const live = speech.createTranscriber({ diarize: true, interimIntervalMs: 0 });
      const finals: Final[] = [];
      live.on('final', (event: Final) => finals.push(event));
      for (let i = 0; i < samples.length; i += 1600) {
        if (!live.write(samples.subarray(i, i + 1600))) await new Promise((resolve) => live.once('drain', resolve));
      }
      live.end();
      await new Promise((resolve, reject) => {
        live.once('finish', resolve);
        live.once('error', reject);
      });
      const spoken = finals.filter((f) => f.text.trim() !== '');
      expect(spoken.length).toBeGreaterThan(2);
      for (const final of spoken) {
        expect(final.speaker).toMatch(/^speaker_\d$/);
        expect(final.words.every((w) => w.speaker !== undefined)).toBe(true);
      }
      const turns = finals.flatMap((f) => f.turns ?? []);
      expect(new Set(turns.map((t) => t.speaker)).size).toBe(2);
      const reference = [...parseRttm(readFileSync(join(dir, `${name}.rttm`), 'utf8')).values()][0]!;
      expect(scoreDiarization(reference, turns).der).toBeLessThan(0.3);
    } finally {
      await speech.close();
    }
  }, 300_000);

  it('/v1/realtime with session.voxmill.diarize: completed events carry speaker, turns and word speakers', async () => {
    const speech = engine();
    const handler = createSpeechHandler({ speech, auth: ['k'] });
    const server = createServer(handler);
    handler.attach(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime`;
    const socket = new WebSocket(url, { headers: { Authorization: 'Bearer k' } });
    const completed: Array<Record<string, unknown>> = [];
    const errors: unknown[] = [];
    socket.on('message', (data) => {
      const event = JSON.parse(String(data)) as { type: string; voxmill?: Record<string, unknown> };
      if (event.type === 'conversation.item.input_audio_transcription.completed') completed.push(event.voxmill ?? {});
      if (event.type === 'error') errors.push(event);
    });
    try {
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(
        JSON.stringify({
          type: 'session.update',
          session: { audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } }, voxmill: { diarize: true } },
        }),
      );
      // The first 40 s, and a second of silence to end the last utterance.
      const samples = readPcm16Wav(join(dir, `${name}.wav`)).subarray(0, 40 * 16000);
      for (let i = 0; i < samples.length; i += 3200) {
        const audio = pcm16(samples.subarray(i, i + 3200)).toString('base64');
        socket.send(JSON.stringify({ type: 'input_audio_buffer.append', audio }));
      }
      const silence = pcm16(new Float32Array(16000)).toString('base64');
      socket.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: silence }));
      const deadline = Date.now() + 120_000;
      while (completed.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(errors).toEqual([]);
      expect(completed.length).toBeGreaterThanOrEqual(3);
      for (const voxmill of completed) {
        expect(voxmill.speaker).toMatch(/^speaker_\d$/);
        expect((voxmill.turns as unknown[]).length).toBeGreaterThan(0);
        expect((voxmill.words as Array<{ speaker?: string }>).every((w) => w.speaker !== undefined)).toBe(true);
      }
    } finally {
      socket.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await speech.close();
    }
  }, 300_000);
});
