import { describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import { defaultEngineThreads, defaultThreads, normalizeTranscribeOptions } from '../../src/stt/request.js';
import { defaultCpuThreads } from '../../src/util/cpu-budget.js';

const defaults = {
  beamSize: 5,
  threads: 3,
  suppressNonSpeech: true,
  conditionOnPreviousText: false,
  repetitionGuard: true,
  skipGuard: true,
};

function rejects(options: unknown): InvalidOptionTypeError | InvalidOptionValueError {
  try {
    normalizeTranscribeOptions(options, defaults);
  } catch (error) {
    if (error instanceof InvalidOptionTypeError || error instanceof InvalidOptionValueError) return error;
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('normalizeTranscribeOptions', () => {
  it('applies the defaults', () => {
    const n = normalizeTranscribeOptions({}, defaults);
    expect(n.timestamps).toBe('segment');
    expect(n.diarize).toBe(false);
    expect(n.language).toBeUndefined();
    expect(n.vad).toBeUndefined();
    expect(n.params).toMatchObject({ beamSize: 5, threads: 3, temperatureIncrement: 0.2, tokenTimestamps: false });
  });

  it('asks whisper for token timestamps only for word timestamps, and maps beamSize 1 to greedy', () => {
    const n = normalizeTranscribeOptions({ timestamps: 'word', beamSize: 1 }, defaults);
    expect(n.params.tokenTimestamps).toBe(true);
    expect(n.params.beamSize).toBe(0);
  });

  it('normalises language hints and treats "auto" as detection', () => {
    expect(normalizeTranscribeOptions({ language: 'DE' }, defaults).language).toBe('de');
    expect(normalizeTranscribeOptions({ language: 'auto' }, defaults).language).toBeUndefined();
    expect(normalizeTranscribeOptions({ language: 'haw' }, defaults).params.language).toBe('haw');
  });

  it.each([
    [{ language: 'xx' }, 'language', InvalidOptionValueError],
    [{ language: 5 }, 'language', InvalidOptionTypeError],
    [{ timestamps: 'words' }, 'timestamps', InvalidOptionValueError],
    [{ diarize: 'true' }, 'diarize', InvalidOptionTypeError],
    [{ beamSize: 17 }, 'beamSize', InvalidOptionValueError],
    [{ beamSize: 2.5 }, 'beamSize', InvalidOptionValueError],
    [{ threads: 0 }, 'threads', InvalidOptionValueError],
    [{ temperature: Number.NaN }, 'temperature', InvalidOptionTypeError],
    [{ prompt: 'x'.repeat(2001) }, 'prompt', InvalidOptionValueError],
    [{ vad: { threshold: 2 } }, 'vad.threshold', InvalidOptionValueError],
    [{ vad: 'yes' }, 'vad', InvalidOptionTypeError],
    [{ signal: {} }, 'signal', InvalidOptionTypeError],
    [{ onProgress: 1 }, 'onProgress', InvalidOptionTypeError],
    [{ timestamp: 'word' }, 'options.timestamp', InvalidOptionValueError],
    [{ maxDurationSeconds: -1 }, 'maxDurationSeconds', InvalidOptionValueError],
  ])('rejects %j naming %s', (options, param, type) => {
    const error = rejects(options);
    expect(error).toBeInstanceOf(type);
    expect(error.param).toBe(param);
    expect(error.message).toContain(param);
    expect(error.message).toContain('received');
  });

  it('rejects a non-object', () => {
    expect(rejects('word').param).toBe('options');
  });
});

describe('defaultThreads', () => {
  it('is the CPU budget, at most 4', () => {
    expect(defaultThreads(1)).toBe(1);
    expect(defaultThreads(3)).toBe(3);
    expect(defaultThreads(31)).toBe(4);
  });
  it('comes from a budget that leaves one core to the host', () => {
    expect(defaultCpuThreads(1)).toBe(1);
    expect(defaultCpuThreads(2)).toBe(1);
    expect(defaultCpuThreads(4)).toBe(3);
    expect(defaultThreads(defaultCpuThreads(2))).toBe(1);
  });
  it("the engine's default adds the thread the budget may lend a lone call, at most 4", () => {
    expect(defaultEngineThreads(defaultCpuThreads(2))).toBe(2);
    expect(defaultEngineThreads(3)).toBe(4);
    expect(defaultEngineThreads(31)).toBe(4);
  });
});
