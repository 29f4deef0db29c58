// Live speech end to end: text written in pieces through the fixture voice's worker pool and the native encoder.
import { afterEach, describe, expect, it } from 'vitest';
// Waits and bounds on how long work takes grow with this machine's slowdown; the library's timeouts do not.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createSpeech,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  type LiveSentence,
  type LiveSpeech,
  type Speech,
  VoiceNotFoundError,
} from '../../src/index.js';
import { normalizeText, splitIntoChunks } from '../../src/tts/text.js';
import { fixture } from '../helpers/paths.js';

let speech: Speech | undefined;
function engine(options: Parameters<typeof createSpeech>[0] = {}): Speech {
  speech = createSpeech({ voiceDirs: [fixture('voices')], ...options });
  return speech;
}
afterEach(async () => {
  await speech?.close();
  speech = undefined;
});

const TEXT = 'Hello there. How are you today? We meet at 5 p.m. on Friday! See you then.';

/** Reads everything, recording the sentence events. */
async function drain(live: LiveSpeech): Promise<{ audio: Buffer; sentences: LiveSentence[] }> {
  const sentences: LiveSentence[] = [];
  live.on('sentence', (sentence: LiveSentence) => sentences.push(sentence));
  const chunks: Buffer[] = [];
  for await (const chunk of live) chunks.push(chunk as Buffer);
  return { audio: Buffer.concat(chunks), sentences };
}

/** Writes text a few characters at a time, as a language model streams tokens. */
function writeInPieces(live: LiveSpeech, text: string, size = 3): void {
  for (let i = 0; i < text.length; i += size) live.write(text.slice(i, i + size));
}

const until = (live: LiveSpeech, event: string) => new Promise((resolve) => live.once(event, resolve));

describe('createLiveSpeech', () => {
  it('speaks text written in pieces as the same audio, sentence for sentence, as the whole text', async () => {
    const s = engine();
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16' });
    expect([live.format, live.contentType, live.sampleRate]).toEqual([
      'pcm16',
      'audio/L16; rate=22050; channels=1',
      22050,
    ]);
    writeInPieces(live, TEXT);
    live.end();
    const { audio, sentences } = await drain(live);
    const whole = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format: 'pcm16' });
    expect(audio.length).toBe(whole.audio.length);
    // "p.m." followed by a lowercase word stays inside its sentence.
    expect(sentences.map((x) => x.text)).toEqual([
      'Hello there.',
      'How are you today?',
      'We meet at 5 p.m. on Friday!',
      'See you then.',
    ]);
    expect(sentences.map((x) => x.index)).toEqual([0, 1, 2, 3]);
    for (let i = 1; i < sentences.length; i++) {
      expect((sentences[i] as LiveSentence).start).toBeGreaterThan((sentences[i - 1] as LiveSentence).start);
    }
    expect(live.progress.sentences).toBe(4);
  });

  it('starts a sentence as soon as a later character confirms its end, before the text is finished', async () => {
    const s = engine();
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'mp3' });
    const first = until(live, 'sentence');
    live.resume();
    live.write('Hello there.');
    // A full stop at the very end is no boundary yet ("p.m." may go on).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(live.progress.sentences).toBe(0);
    live.write(' And');
    expect(await first).toMatchObject({ index: 0, text: 'Hello there.', start: 0 });
    // flush() speaks the unfinished rest now.
    const second = until(live, 'sentence');
    live.flush();
    expect(await second).toMatchObject({ index: 1, text: 'And' });
    live.end();
    await until(live, 'end');
  });

  it('cancel() stops synthesis within a sentence, ends the audio, frees the worker and drops later text', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16', maxPendingSentences: 100 });
    live.write(`${'This is one sentence of a long answer. '.repeat(60)}End.`);
    const ended = until(live, 'end');
    let chunks = 0;
    live.on('data', () => {
      if (++chunks === 1) live.cancel();
    });
    await ended;
    const spoken = live.progress.sentences;
    expect(spoken).toBeLessThan(5);
    live.write('Ignored after cancel.');
    await new Promise((resolve) => setTimeout(resolve, scaledMs(200)));
    expect(live.progress.sentences).toBe(spoken);
    expect(s.ttsStatus().active).toBe(0);
    live.end();
  });

  it('holds the writer back while maxPendingSentences wait, and lets it go as they are spoken', async () => {
    const s = engine();
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16', maxPendingSentences: 1 });
    const accepted: boolean[] = [];
    for (let i = 0; i < 5; i++) accepted.push(live.write(`Sentence number ${i} is here. `));
    expect(accepted.at(-1)).toBe(false);
    live.write('Last.');
    live.end();
    const { sentences } = await drain(live);
    expect(sentences).toHaveLength(6);
  });

  it('rejects bad options and bad writes with typed errors naming the field', async () => {
    const s = engine();
    await expect(s.createLiveSpeech({ voice: 'nobody' })).rejects.toBeInstanceOf(VoiceNotFoundError);
    await expect(s.createLiveSpeech({ voice: 'en_US-fixture', maxPendingSentences: 0 })).rejects.toThrow(
      /maxPendingSentences/,
    );
    await expect(s.createLiveSpeech({ voice: 'en_US-fixture', maxPendingSentences: 0 })).rejects.toBeInstanceOf(
      InvalidOptionValueError,
    );
    await expect(s.createLiveSpeech({ voice: 'en_US-fixture', input: 'x' } as never)).rejects.toThrow(/input/);

    const live = await s.createLiveSpeech({ voice: 'en_US-fixture' });
    const failed = until(live, 'error');
    live.write(42 as never);
    const error = await failed;
    expect(error).toBeInstanceOf(InvalidOptionTypeError);
    expect(String(error)).toMatch(/text/);

    const long = await s.createLiveSpeech({ voice: 'en_US-fixture' });
    const tooLong = until(long, 'error');
    long.write('a'.repeat(5001));
    expect(await tooLong).toBeInstanceOf(InvalidOptionValueError);
    expect(s.ttsStatus().active).toBe(0);
  });

  it('an aborted signal destroys the stream with its reason and frees the worker', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    const controller = new AbortController();
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'wav', signal: controller.signal });
    live.write(`${'A sentence to keep the worker busy. '.repeat(30)}End.`);
    const reason = new Error('caller went away');
    const failed = until(live, 'error');
    live.once('data', () => controller.abort(reason));
    live.resume();
    expect(await failed).toBe(reason);
    await new Promise((resolve) => setTimeout(resolve, scaledMs(100)));
    expect(s.ttsStatus().active).toBe(0);
  });

  it('cuts markdown text where synthesize would, and never joins two words across writes', async () => {
    const s = engine({ tts: { maxChunkChars: 40 } });
    const text = 'We use it, e.g. **bold** text is fine. At 5 p.m. 😀 on Friday! Next one.';
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16' });
    writeInPieces(live, text, 5);
    live.end();
    const { sentences } = await drain(live);
    expect(sentences.map((x) => x.text)).toEqual(splitIntoChunks(normalizeText(text), 40));

    const long = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16' });
    for (const piece of ['alpha bravo charlie delta echo foxtrot golf ', 'hotel india juliet kilo lima mike ']) {
      long.write(piece.repeat(2));
    }
    long.write('november oscar.');
    long.end();
    const spoken = (await drain(long)).sentences.map((x) => x.text).join(' ');
    expect(spoken).not.toMatch(/golfhotel|mikealpha|mikenovember|golfalpha/);
    expect(spoken.split(' ')).toHaveLength(2 * 7 + 2 * 6 + 2);
  });

  it('takes UTF-8 bytes split anywhere, and releases the worker before a slow reader reads', async () => {
    const s = engine({ tts: { workers: 1, readerTimeoutMs: scaledMs(30_000) } });
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16', maxPendingSentences: 100 });
    const first = until(live, 'sentence');
    const bytes = Buffer.from(`Café au lait, s'il vous plaît. ${'Another sentence for the reader. '.repeat(40)}`);
    live.write(bytes.subarray(0, 3)); // splits the é
    live.write(bytes.subarray(3));
    // Nobody reads the live speech: another caller still gets the only worker at once.
    await new Promise((resolve) => setTimeout(resolve, scaledMs(300)));
    const started = performance.now();
    const other = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Me too.', format: 'pcm16' });
    expect(other.audio.length).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(scaledMs(2000));
    live.end();
    expect(await first).toMatchObject({ index: 0, text: "Café au lait, s'il vous plaît." });
    await drain(live);
    expect(live.progress.sentences).toBe(41);
  });

  it("a writer that ignores 'drain' fails the stream with TTS_WRITE_OVERFLOW, and its write's callback is called", async () => {
    const s = engine();
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16', maxPendingSentences: 1 });
    const failed = until(live, 'error');
    let called: unknown;
    for (let i = 0; i < 2000 && !live.destroyed; i++) {
      live.write(`Sentence ${i} here. `, (error?: Error | null) => {
        if (error) called = error;
      });
    }
    expect(await failed).toMatchObject({ code: 'TTS_WRITE_OVERFLOW' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(called).toMatchObject({ code: 'TTS_WRITE_OVERFLOW' });
  });

  it('an unfinished sentence that never ends is cut like a long one', async () => {
    const s = engine({ tts: { maxChunkChars: 100 } });
    const live = await s.createLiveSpeech({ voice: 'en_US-fixture', format: 'pcm16' });
    live.resume();
    const first = until(live, 'sentence');
    writeInPieces(live, 'word, '.repeat(60), 12);
    expect(await first).toMatchObject({ index: 0 });
    live.end();
    await until(live, 'end');
  });
});
