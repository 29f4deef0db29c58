// Speaker diarization end to end: the real Silero VAD, built-in features or the fixture embedding model, the
// worker thread, two-channel audio, attaching speakers to transcripts, the CLI's RTTM.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
// A test's own time limit grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { attachSpeakers } from '../../src/diarize/attach.js';
import {
  createSpeech,
  decodeAudio,
  ModelNotFoundError,
  parseRttm,
  type Speech,
  scoreDiarization,
} from '../../src/index.js';
import type { Transcription } from '../../src/stt/types.js';
import { measureEventLoop } from '../helpers/event-loop.js';
import { wavFile } from '../helpers/hostile-audio.js';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';

const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const tinyEn = fixture('models/ggml-tiny.en-random.bin');
let speech: Speech | undefined;

function engine(options: Parameters<typeof createSpeech>[0] = {}): Speech {
  speech = createSpeech({ vadModel, models: { 'svc-stt-1': tinyEn }, ...options });
  return speech;
}

afterEach(async () => {
  await speech?.close();
  speech = undefined;
});

const reference = () => parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).get('sample') ?? [];

describe('diarize', () => {
  it('pyannote_sample.wav: two speakers, DER within 15% with the built-in features (0.25 s collar)', async () => {
    const result = await engine().diarize(sharedAudio('pyannote_sample.wav'));
    const score = scoreDiarization(reference(), result.turns);
    expect(result.method).toBe('features');
    expect(result.speakers).toEqual(['speaker_1', 'speaker_2']);
    expect(score.der).toBeLessThanOrEqual(0.15);
    expect(result.duration).toBeCloseTo(30, 1);
    for (let i = 1; i < result.turns.length; i++) {
      expect(result.turns[i]!.start).toBeGreaterThanOrEqual(result.turns[i - 1]!.end);
    }
  });

  it('stereo_diarization.wav: one speaker per channel, labelled by the louder channel', async () => {
    const s = engine();
    const result = await s.diarize(sharedAudio('stereo_diarization.wav'));
    expect(result.method).toBe('channels');
    expect(result.speakers).toEqual(['speaker_1', 'speaker_2']);
    const audio = await decodeAudio(sharedAudio('stereo_diarization.wav'), { channels: 'stereo' });
    const { left, right } = audio.channels!;
    const energy = (x: Float32Array, start: number, end: number) =>
      x.subarray(Math.round(start * 16000), Math.round(end * 16000)).reduce((sum, v) => sum + v * v, 0);
    const louder = new Map<string, 'left' | 'right'>();
    for (const turn of result.turns) {
      const side = energy(left, turn.start, turn.end) > energy(right, turn.start, turn.end) ? 'left' : 'right';
      expect(louder.get(turn.speaker) ?? side).toBe(side);
      louder.set(turn.speaker, side);
    }
    expect(new Set(louder.values()).size).toBe(2);

    const transcription = await s.transcribe(sharedAudio('stereo_diarization.wav'), {
      diarize: true,
      timestamps: 'none',
      temperatureIncrement: 0,
      threads: 1,
    });
    expect(transcription.words).toBeUndefined();
    // Random weights make meaningless words, so the transcript's own segments prove only the wiring here...
    expect(transcription.segments?.length).toBeGreaterThan(0);
    for (const segment of transcription.segments ?? []) expect(result.speakers).toContain(segment.speaker);
    // ...and a transcript with words where the speech is shows the labelling: every segment, split where the
    // speaker changes, carries the speaker of the louder channel over its span.
    const words = Array.from({ length: 15 }, (_, i) => ({ word: `w${i}`, start: 0.3 + i * 0.3, end: 0.5 + i * 0.3 }));
    const synthetic: Transcription = {
      text: '',
      language: 'en',
      duration: 5,
      segments: [
        { id: 0, start: 0.3, end: 2.6, text: '' },
        { id: 1, start: 2.6, end: 4.8, text: '' },
      ],
    };
    attachSpeakers(synthetic, words, result.turns);
    expect(synthetic.segments?.length).toBeGreaterThanOrEqual(2);
    for (const segment of synthetic.segments ?? []) {
      const side =
        energy(left, segment.start, segment.end) > energy(right, segment.start, segment.end) ? 'left' : 'right';
      expect(louder.get(segment.speaker ?? ''), `${segment.start}-${segment.end}`).toBe(side);
    }
  });

  it('silence, one speaker and very short clips: one speaker or none, never a crash', async () => {
    const s = engine();
    expect((await s.diarize(fixture('audio/silence-60s.wav'))).turns).toEqual([]);
    expect((await s.diarize(sharedAudio('jfk.wav'))).speakers).toEqual(['speaker_1']);
    expect((await s.diarize(sharedAudio('2830-3980-0043.wav'))).speakers.length).toBeLessThanOrEqual(1);
    await expect(s.diarize(new Float32Array(0))).rejects.toMatchObject({ code: 'AUDIO_EMPTY' });
    // Transcribing no samples is empty text, with or without speakers asked for.
    for (const timestamps of ['word', 'segment'] as const) {
      const empty = await s.transcribe(new Float32Array(0), { diarize: true, timestamps });
      expect(empty).toMatchObject({ text: '', duration: 0, segments: [] });
      expect(empty.words === undefined).toBe(timestamps === 'segment');
    }
    for (const seconds of [0.01, 0.3, 1]) {
      const pcm = new Float32Array(Math.round(seconds * 16000));
      for (let i = 0; i < pcm.length; i++) pcm[i] = 0.3 * Math.sin(i / 5);
      const result = await s.diarize(pcm);
      expect(result.speakers.length, String(seconds)).toBeLessThanOrEqual(1);
    }
  });

  it('numSpeakers is honoured; bad counts are named', async () => {
    const s = engine();
    expect((await s.diarize(sharedAudio('pyannote_sample.wav'), { numSpeakers: 3 })).speakers.length).toBe(3);
    await expect(s.diarize(sharedAudio('jfk.wav'), { minSpeakers: 4, maxSpeakers: 2 })).rejects.toMatchObject({
      param: 'maxSpeakers',
    });
    await expect(s.diarize(sharedAudio('jfk.wav'), { speakers: 2 } as never)).rejects.toMatchObject({
      param: 'options.speakers',
    });
  });

  it("runs the speaker-embedding model on the addon's ONNX Runtime when one is configured", async () => {
    const s = engine({ diarization: { embeddingModel: fixture('embeddings/fixture-speaker-embedding.onnx') } });
    const result = await s.diarize(sharedAudio('pyannote_sample.wav'), { numSpeakers: 2 });
    expect(result.method).toBe('embedding');
    expect(result.speakers).toEqual(['speaker_1', 'speaker_2']);
    // The same input again: the same turns (the model is loaded once and reused).
    expect((await s.diarize(sharedAudio('pyannote_sample.wav'), { numSpeakers: 2 })).turns).toEqual(result.turns);
  });

  it('needs the VAD model, and says how to get it', async () => {
    const s = engine({ vadModel: join(repoRoot, 'no-such-vad.bin') });
    await expect(s.diarize(sharedAudio('jfk.wav'))).rejects.toBeInstanceOf(ModelNotFoundError);
  });

  it('keeps the event loop ticking on gb0.wav (127 s), and aborts with the signal reason', async () => {
    const s = engine();
    const { result, ratio } = await measureEventLoop(() => s.diarize(sharedAudio('gb0.wav')));
    // 0.88-0.89 alone, 0.74-0.80 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.55);
    expect(result.speakers).toEqual(['speaker_1']);
    const controller = new AbortController();
    const reason = new Error('enough');
    const pending = s.diarize(sharedAudio('gb0.wav'), { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 100);
    await expect(pending).rejects.toBe(reason);
    expect((await s.diarize(sharedAudio('jfk.wav'))).speakers).toEqual(['speaker_1']);
  });
});

describe('known speakers', () => {
  const embeddingModel = fixture('embeddings/fixture-speaker-embedding.onnx');
  const sample = sharedAudio('pyannote_sample.wav');

  /** The audio of one speaker's turns in a first run, joined (at most 30 s): a clip of their voice. */
  async function clipOf(turns: readonly { start: number; end: number; speaker: string }[], speaker: string) {
    const { samples } = await decodeAudio(sample);
    const parts = turns
      .filter((t) => t.speaker === speaker)
      .map((t) => samples.subarray(Math.round(t.start * 16000), Math.round(t.end * 16000)));
    const joined = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const part of parts) {
      joined.set(part, offset);
      offset += part.length;
    }
    return joined.subarray(0, 30 * 16000);
  }

  it('a speaker whose clip matches takes its name, the other keeps speaker_N; a near-zero threshold names nobody', async () => {
    const s = engine({ diarization: { embeddingModel } });
    const first = await s.diarize(sample, { numSpeakers: 2 });
    const clip = await clipOf(first.turns, 'speaker_2');
    const named = await s.diarize(sample, { numSpeakers: 2, knownSpeakers: [{ name: 'Ada', audio: clip }] });
    // The same clustering (numSpeakers fixes it), the clip's speaker renamed, the other numbered from 1.
    expect(named.turns).toEqual(
      first.turns.map((t) => ({ ...t, speaker: t.speaker === 'speaker_2' ? 'Ada' : 'speaker_1' })),
    );
    expect(named.speakers).toEqual(['speaker_1', 'Ada']);
    await s.close();

    // With numSpeakers the threshold only decides matches: a distance of 1e-6 is never met.
    const strict = engine({ diarization: { embeddingModel, threshold: 1e-6 } });
    const unnamed = await strict.diarize(sample, { numSpeakers: 2, knownSpeakers: [{ name: 'Ada', audio: clip }] });
    expect(unnamed.turns).toEqual(first.turns);
  });

  it('a known name that looks like a generated label is not given twice', async () => {
    const s = engine({ diarization: { embeddingModel } });
    const first = await s.diarize(sample, { numSpeakers: 2 });
    const clip = await clipOf(first.turns, 'speaker_2');
    const named = await s.diarize(sample, { numSpeakers: 2, knownSpeakers: [{ name: 'speaker_1', audio: clip }] });
    expect(named.speakers).toEqual(['speaker_2', 'speaker_1']);
  });

  it('transcribe labels segments with the known name', async () => {
    const s = engine({ diarization: { embeddingModel } });
    const first = await s.diarize(sample, { numSpeakers: 2 });
    const clip = await clipOf(first.turns, 'speaker_1');
    const result = await s.transcribe(sample, {
      diarize: { numSpeakers: 2, knownSpeakers: [{ name: 'Grace', audio: clip }] },
    });
    const speakers = new Set(result.segments?.map((segment) => segment.speaker));
    expect(speakers.has('Grace')).toBe(true);
    expect([...speakers].every((speaker) => speaker === 'Grace' || speaker === 'speaker_1')).toBe(true);
  });

  it('bad known speakers are named: no embedding model, a clip too short, too long, silent or not audio, names', async () => {
    const clip = new Float32Array(2 * 16000).fill(0.1);
    await expect(engine().diarize(sample, { knownSpeakers: [{ name: 'Ada', audio: clip }] })).rejects.toMatchObject({
      name: 'InvalidOptionValueError',
      param: 'knownSpeakers',
    });
    await speech?.close();
    const s = engine({ diarization: { embeddingModel } });
    const cases: Array<[unknown, string]> = [
      [[{ name: 'Ada', audio: new Float32Array(8000) }], 'knownSpeakers[0].audio'],
      [[{ name: 'Ada', audio: new Float32Array(31 * 16000) }], 'knownSpeakers[0].audio'],
      [[{ name: 'Ada', audio: Buffer.from('not audio at all') }], 'knownSpeakers[0].audio'],
      // 2 s of silence: long enough, but nobody speaks in it.
      [[{ name: 'Ada', audio: new Float32Array(2 * 16000) }], 'knownSpeakers[0].audio'],
      [[{ name: 'Ada', audio: '' }], 'knownSpeakers[0].audio'],
      [[{ name: 'Ada', audio: 42 }], 'knownSpeakers[0].audio'],
      [
        [
          { name: 'Ada', audio: clip },
          { name: 'Ada', audio: clip },
        ],
        'knownSpeakers[1].name',
      ],
      [[{ name: ' ', audio: clip }], 'knownSpeakers[0].name'],
      [[{ name: 'Ada' }], 'knownSpeakers[0].audio'],
      [[{ name: 'Ada', audio: clip, age: 3 }], 'knownSpeakers[0].age'],
      [Array.from({ length: 9 }, (_, i) => ({ name: `p${i}`, audio: clip })), 'knownSpeakers'],
      ['Ada', 'knownSpeakers'],
    ];
    for (const [knownSpeakers, param] of cases) {
      await expect(
        s.diarize(sample, { knownSpeakers } as unknown as Parameters<Speech['diarize']>[1]),
        param,
      ).rejects.toMatchObject({ param });
    }
    await expect(
      s.transcribe(sample, { diarize: { knownSpeakers: [{ name: 'Ada', audio: new Float32Array(10) }] } }),
    ).rejects.toMatchObject({ param: 'diarize.knownSpeakers[0].audio' });
  });
});

describe('transcribe with diarize', () => {
  it(
    'returns segments labelled with speakers whatever timestamps is; words carry speakers when asked',
    async () => {
      const s = engine();
      const options = { diarize: true, temperatureIncrement: 0, threads: 1 } as const;
      const none = await s.transcribe(sharedAudio('pyannote_sample.wav'), { ...options, timestamps: 'none' });
      expect(none.segments?.length).toBeGreaterThan(0);
      expect(none.words).toBeUndefined();
      const labelled = (none.segments ?? []).filter((segment) => segment.speaker !== undefined);
      expect(labelled.length).toBeGreaterThan(0);
      expect(labelled.every((segment) => /^speaker_[1-9]\d*$/.test(segment.speaker ?? ''))).toBe(true);
      expect(none.segments?.map((segment) => segment.id)).toEqual(none.segments?.map((_, i) => i));
      const withWords = await s.transcribe(sharedAudio('jfk.wav'), { ...options, timestamps: 'word' });
      expect(withWords.words?.length).toBeGreaterThan(0);
      expect(withWords.words?.every((word) => word.speaker === 'speaker_1')).toBe(true);
    },
    scaledMs(300_000),
  );
});

describe('voxmill diarize', () => {
  const cli = join(repoRoot, 'dist', 'cli', 'main.js');
  const run = promisify(execFile);

  it('prints RTTM with the file base name as recording id, and JSON', async () => {
    const { stdout } = await run(process.execPath, [
      cli,
      'diarize',
      sharedAudio('pyannote_sample.wav'),
      '--vad-model',
      vadModel,
    ]);
    const turns = parseRttm(stdout).get('pyannote_sample');
    expect(turns?.length).toBeGreaterThan(1);
    expect(scoreDiarization(reference(), turns ?? []).der).toBeLessThanOrEqual(0.15);
    const json = await run(process.execPath, [
      cli,
      'diarize',
      sharedAudio('jfk.wav'),
      '--format',
      'json',
      '--vad-model',
      vadModel,
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({ speakers: ['speaker_1'], method: 'features' });
  });

  it('--speaker NAME=FILE labels a known speaker; a malformed one is refused', async () => {
    // jfk.wav is one voice; its own first 10 s are a clip of it.
    const { samples } = await decodeAudio(sharedAudio('jfk.wav'));
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-speaker-'));
    const clip = join(dir, 'kennedy.wav');
    writeFileSync(
      clip,
      wavFile({ format: 3, rate: 16000, channels: 1, bits: 32 }, Buffer.from(samples.slice(0, 160000).buffer)),
    );
    const embedding = fixture('embeddings/fixture-speaker-embedding.onnx');
    const common = ['--vad-model', vadModel, '--embedding-model', embedding, '--format', 'json'];
    const json = await run(process.execPath, [
      cli,
      'diarize',
      sharedAudio('jfk.wav'),
      ...common,
      '--speaker',
      `JFK=${clip}`,
    ]);
    rmSync(dir, { recursive: true, force: true });
    expect(JSON.parse(json.stdout)).toMatchObject({ speakers: ['JFK'], method: 'embedding' });
    const bad = await run(process.execPath, [
      cli,
      'diarize',
      sharedAudio('jfk.wav'),
      ...common,
      '--speaker',
      'JFK',
    ]).catch((error: { code: number; stderr: string }) => error);
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringMatching(/--speaker must be NAME=FILE/u) });
  });
});

describe('segmentation model', () => {
  const embeddingModel = fixture('embeddings/fixture-speaker-embedding.onnx');
  const segmentationModel = fixture('embeddings/fixture-speaker-segmentation.onnx');

  it('runs the segmentation pipeline with an embedding model: method segmentation, turns within the audio', async () => {
    const s = engine({ diarization: { embeddingModel, segmentationModel } });
    const result = await s.diarize(sharedAudio('pyannote_sample.wav'));
    expect(result.method).toBe('segmentation');
    expect(result.turns.length).toBeGreaterThan(0);
    for (const turn of result.turns) {
      expect(turn.start).toBeGreaterThanOrEqual(0);
      expect(turn.end).toBeGreaterThan(turn.start);
      expect(turn.end).toBeLessThanOrEqual(result.duration + 1e-3);
    }
    // numSpeakers is honoured, and silence has no turns.
    expect((await s.diarize(sharedAudio('pyannote_sample.wav'), { numSpeakers: 1 })).speakers).toEqual(['speaker_1']);
    expect((await s.diarize(new Float32Array(16000 * 12))).turns).toEqual([]);
  });

  it('names a known speaker among the clustered local speakers', async () => {
    const s = engine({ diarization: { embeddingModel, segmentationModel } });
    const sample = sharedAudio('pyannote_sample.wav');
    const first = await s.diarize(sample, { numSpeakers: 2 });
    expect(first.speakers).toEqual(['speaker_1', 'speaker_2']);
    // The turns of the speaker with more speech joined: a clip of that voice (the fixture models' split of the
    // sample is arbitrary, and a clip needs 1 s of speech).
    const { samples } = await decodeAudio(sample);
    const talk = (speaker: string) =>
      first.turns.filter((t) => t.speaker === speaker).reduce((sum, t) => sum + t.end - t.start, 0);
    const voice = talk('speaker_1') >= talk('speaker_2') ? 'speaker_1' : 'speaker_2';
    const parts = first.turns
      .filter((t) => t.speaker === voice)
      .map((t) => samples.subarray(Math.round(t.start * 16000), Math.round(t.end * 16000)));
    const clip = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      clip.set(part, at);
      at += part.length;
    }
    const named = await s.diarize(sample, {
      numSpeakers: 2,
      knownSpeakers: [{ name: 'Ada', audio: clip.subarray(0, 30 * 16000) }],
    });
    expect(named.speakers).toContain('Ada');
  });

  it('keeps the event loop ticking on gb0.wav (127 s)', async () => {
    const s = engine({ diarization: { embeddingModel, segmentationModel } });
    const { result, ratio } = await measureEventLoop(() => s.diarize(sharedAudio('gb0.wav')));
    // The same bound as the window pipeline's (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.55);
    expect(result.method).toBe('segmentation');
  });

  it('refuses a segmentation model without an embedding model, and names a model that answers the wrong shape', async () => {
    const s = engine({ diarization: { embeddingModel: null, segmentationModel } });
    await expect(s.diarize(sharedAudio('jfk.wav'))).rejects.toMatchObject({
      name: 'InvalidOptionValueError',
      param: 'diarization.segmentationModel',
    });
    await s.close();
    // The embedding model given as the segmentation model: ONNX Runtime refuses the chunk, and the error says which
    // model it was.
    const wrong = engine({ diarization: { embeddingModel, segmentationModel: embeddingModel } });
    await expect(wrong.diarize(sharedAudio('jfk.wav'))).rejects.toMatchObject({
      name: 'DiarizationError',
      message: expect.stringMatching(/^speaker segmentation model .*fixture-speaker-embedding\.onnx failed: .*feats/),
    });
    await wrong.close();
    const missing = engine({ diarization: { embeddingModel, segmentationModel: '/nonexistent/seg.onnx' } });
    await expect(missing.diarize(sharedAudio('jfk.wav'))).rejects.toBeInstanceOf(ModelNotFoundError);
  });
});
