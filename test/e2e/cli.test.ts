import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';

const run = promisify(execFile);
const cli = join(repoRoot, 'dist', 'cli', 'main.js');
const transcribe = (...args: string[]) =>
  run(process.execPath, [
    cli,
    'transcribe',
    '-m',
    fixture('models/ggml-tiny.en-random.bin'),
    '--threads',
    '1',
    ...args,
  ]);

beforeAll(() => {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run 'npm run build:ts' (npm ci does it)`);
});

describe('voxmill CLI', () => {
  it('transcribe -f json prints the spec-shaped result', async () => {
    const { stdout } = await transcribe('-f', 'json', sharedAudio('jfk.wav'));
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ language: 'en', duration: 11 });
    expect(Array.isArray(result.segments)).toBe(true);
  });

  it('transcribe -f srt prints numbered cues', async () => {
    const { stdout } = await transcribe('-f', 'srt', sharedAudio('2830-3980-0043.wav'));
    expect(stdout).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n/);
  });

  it('transcribe takes the VAD and invented-text flags', async () => {
    const silero = sharedModel('whisper/ggml-silero-v6.2.0.bin');
    const silence = fixture('audio/silence-60s.wav');
    // The VAD is on by default once its model is there: a minute of silence is never decoded.
    const vad = JSON.parse((await transcribe('--vad-model', silero, '-f', 'json', silence)).stdout);
    expect(vad).toMatchObject({ text: '', duration: 60, segments: [] });
    const { stdout } = await transcribe(
      '--vad-model',
      silero,
      '--no-vad',
      '--suppress-non-speech',
      '--no-condition-on-previous-text',
      '--no-repetition-guard',
      '--keep-annotations',
      '-f',
      'json',
      sharedAudio('2830-3980-0043.wav'),
    );
    expect(JSON.parse(stdout)).toMatchObject({ language: 'en' });
  });

  it('fails with one line and exit code 1 on undecodable input', async () => {
    const error = await transcribe(join(repoRoot, 'package.json')).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr).toMatch(/^voxmill: not a recognised audio format.*\n$/);
  });

  it('--version names whisper.cpp and FFmpeg', async () => {
    const { stdout } = await run(process.execPath, [cli, '--version']);
    expect(stdout).toMatch(/whisper\.cpp 1\.9\.1, FFmpeg /);
  });
});

describe('voxmill say / voices', () => {
  const voiceDir = fixture('voices');
  const temp = mkdtempSync(join(tmpdir(), 'voxmill-say-'));

  it('say writes the audio to a file in the format of its extension', async () => {
    const output = join(temp, 'hello.wav');
    await run(process.execPath, [
      cli,
      'say',
      'Hello there.',
      '-v',
      'en_US-fixture',
      '--voice-dir',
      voiceDir,
      '-o',
      output,
    ]);
    const audio = readFileSync(output);
    expect(audio.toString('ascii', 0, 4)).toBe('RIFF');
    expect(audio.readUInt32LE(24)).toBe(22050);
  });

  it('say fails with one line naming the voice, and leaves no file behind', async () => {
    const output = join(temp, 'none.mp3');
    const error = await run(process.execPath, [
      cli,
      'say',
      'Hi.',
      '-v',
      'nobody',
      '--voice-dir',
      voiceDir,
      '-o',
      output,
    ]).catch((e: unknown) => e as { code: number; stderr: string });
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr).toMatch(/^voxmill: no installed voice has id "nobody"/);
    expect(readdirSync(temp).filter((name) => name.startsWith('none'))).toEqual([]);
  });

  it('voices --json lists the installed voices', async () => {
    const { stdout } = await run(process.execPath, [cli, 'voices', '--json', '--voice-dir', voiceDir]);
    const voices = JSON.parse(stdout) as Array<{ id: string }>;
    expect(voices.map((v) => v.id)).toContain('en_US-fixture_multi#carol');
  });
});
