import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
    // Greedy: random weights decode to the token limit, and these tests check the command, not the decoding.
    '--beam-size',
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

  it('subtitles always carry timed cues: --timestamps word keeps the segments, none is refused', async () => {
    const words = await transcribe('-f', 'vtt', '--timestamps', 'word', sharedAudio('2830-3980-0043.wav'));
    expect(words.stdout).toMatch(/^WEBVTT\n\n\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n\S/u);
    const srt = await transcribe('-f', 'srt', '--timestamps', 'word', sharedAudio('2830-3980-0043.wav'));
    expect(srt.stdout).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> /u);
    const refused = await transcribe('-f', 'srt', '--timestamps', 'none', sharedAudio('jfk.wav')).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/-f srt needs timed cues/u) });
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

  it('several files: labelled text, one JSON array, srt refused without --output-dir, which writes a file each', async () => {
    const files = [sharedAudio('jfk.wav'), sharedAudio('2830-3980-0043.wav')];
    const text = (await transcribe('--no-progress', ...files)).stdout.trimEnd().split('\n');
    expect(text.map((line) => line.split(': ', 1)[0])).toEqual(files);
    const json = JSON.parse((await transcribe('-f', 'json', ...files)).stdout) as Array<{ file: string }>;
    expect(json.map((document) => document.file)).toEqual(files);
    const refused = await transcribe('-f', 'srt', ...files).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/several files as srt need --output-dir/u),
    });
    const dir = join(mkdtempSync(join(tmpdir(), 'voxmill-out-')), 'subtitles');
    const written = await transcribe('-f', 'srt', '--output-dir', dir, ...files);
    expect(written.stdout).toBe('');
    expect(readdirSync(dir).sort()).toEqual(['2830-3980-0043.srt', 'jfk.srt']);
    expect(readFileSync(join(dir, 'jfk.srt'), 'utf8')).toMatch(/^1\n\d\d:/u);
    const clash = await transcribe('--output-dir', dir, files[0] as string, sharedAudio('jfk.mp3')).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(clash).toMatchObject({ code: 1, stderr: expect.stringMatching(/would both be written to/u) });
  });

  it('several files, one undecodable: the others are kept (JSON { file, error }), it is named, and the exit is 1', async () => {
    const broken = join(repoRoot, 'package.json');
    const files = [sharedAudio('jfk.wav'), broken, sharedAudio('2830-3980-0043.wav')];
    const json = await transcribe('-f', 'json', ...files).catch(
      (e: unknown) => e as { code: number; stdout: string; stderr: string },
    );
    expect(json).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`voxmill: ${broken}: not a recognised audio format`),
    });
    const documents = JSON.parse(json.stdout) as Array<{ file: string; text?: string; error?: { message: string } }>;
    expect(documents.map((d) => d.file)).toEqual(files);
    expect(documents[1]?.error?.message).toMatch(/not a recognised audio format/u);
    expect(typeof documents[2]?.text).toBe('string');
    const text = await transcribe('--no-progress', ...files).catch(
      (e: unknown) => e as { code: number; stdout: string },
    );
    expect(text).toMatchObject({ code: 1 });
    expect(
      text.stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.split(': ', 1)[0]),
    ).toEqual([files[0], files[2]]);
    // What would fail every file stops the run once, not once per file.
    const missing = await transcribe('-m', '/nowhere/ggml-x.bin', ...files).catch(
      (e: unknown) => e as { code: number; stdout: string; stderr: string },
    );
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr.match(/is not installed/gu)).toHaveLength(1);
  });

  it('a progress bar gives the terminal back and exits 130 on Ctrl-C', async () => {
    // The bar on a stream that says it is a terminal, then SIGINT: line wrapping and the cursor come back.
    const script = `
      const { terminalBar } = await import(${JSON.stringify(join(repoRoot, 'dist', 'cli', 'terminal-bar.js'))});
      process.stderr.isTTY = true;
      const bar = terminalBar(process.stderr, '[{bar}] {percentage}%', { exitOnSignal: true });
      bar.start(100, 10);
      process.kill(process.pid, 'SIGINT');
      setTimeout(() => {}, 5000);`;
    const result = await run(process.execPath, ['--input-type=module', '-e', script]).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(result).toMatchObject({ code: 130 });
    expect((result as { stderr: string }).stderr.endsWith('\u001b[?7h\u001b[?25h\n')).toBe(true);
  });

  it('models add registers a ggml file you have; transcribe then takes its id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-add-'));
    const added = await run(process.execPath, [
      cli,
      'models',
      'add',
      fixture('models/ggml-tiny.en-random.bin'),
      '--id',
      'my-tiny',
      '--dir',
      dir,
    ]);
    expect(added.stdout).toMatch(/^my-tiny: added .*sha256 [0-9a-f]{64}\); use it as: voxmill transcribe -m my-tiny/u);
    const { stdout } = await run(process.execPath, [
      cli,
      'transcribe',
      '-m',
      'my-tiny',
      '--models-dir',
      dir,
      '--threads',
      '1',
      '-f',
      'json',
      sharedAudio('2830-3980-0043.wav'),
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ language: 'en' });
    const list = await run(process.execPath, [cli, 'models', 'list', '--dir', dir]);
    expect(list.stdout).toMatch(/added with 'voxmill models add':\nmy-tiny {2}whisper/u);
    // Offline, with only the added model: the default's error lists it (and -m); a model named by -m is named as
    // written (no internal id); an unknown one names the folder searched.
    const failure = (args: string[]): Promise<{ code?: number; stderr: string }> =>
      run(process.execPath, [cli, 'transcribe', '--models-dir', dir, ...args, sharedAudio('jfk.wav')]).catch(
        (error: { code: number; stderr: string }) => error,
      );
    const installedList = `installed speech-to-text models in ${dir}: my-tiny (name one as the model; on the command line: -m <id>)`;
    const byDefault = await failure([]);
    expect(byDefault.code).toBe(1);
    expect(byDefault.stderr).toContain('model svc-stt-1 (base) is not installed');
    expect(byDefault.stderr).toContain(installedList);
    const named = await failure(['-m', 'tiny.en']);
    expect(named.stderr).toMatch(
      /model tiny\.en is not installed: .* voxmill models pull tiny\.en \[MODEL_NOT_FOUND\]\nvoxmill: installed/u,
    );
    expect(named.stderr).not.toContain('cli');
    const unknown = await failure(['-m', 'tiny-en']);
    expect(unknown.stderr).toContain(
      `"tiny-en" is not a catalog model id, a model added with 'voxmill models add <file>'`,
    );
    expect(unknown.stderr).toContain(`models directory searched: ${dir}`);
    expect(unknown.stderr).toContain(installedList);
    const doctor = JSON.parse((await run(process.execPath, [cli, 'doctor', '--json', '--models-dir', dir])).stdout);
    expect(doctor.installedModels).toEqual(['my-tiny']);
    expect(doctor.warnings).toContain(
      'no configured speech-to-text model is installed (voxmill models pull svc-stt-1); installed instead: my-tiny ' +
        '(name one with -m <id>)',
    );
  });

  it('--version names whisper.cpp and FFmpeg', async () => {
    const { stdout } = await run(process.execPath, [cli, '--version']);
    expect(stdout).toMatch(/whisper\.cpp 1\.9\.1, FFmpeg /);
    expect(stdout).toMatch(/^backends: .*CPU/mu);
  });

  it('doctor reports the backends, the devices, and the device each configured model runs on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-doctor-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin'), 'svc-stt-1-flash': join(dir, 'none.bin') },
        voiceDirs: [fixture('voices')],
      }),
    );
    const { stdout } = await run(process.execPath, [
      cli,
      'doctor',
      '--json',
      '--load',
      '-c',
      config,
      '--models-dir',
      dir,
    ]);
    const report = JSON.parse(stdout);
    expect(report.addon).toMatchObject({ ok: true, whisper: '1.9.1' });
    expect(report.addon.backends).toContain('CPU');
    expect(report.addon.devices.map((d: { type: string }) => d.type)).toContain('cpu');
    expect(report.onnxRuntime).toMatchObject({ ok: true });
    expect(report.models).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: 'svc-stt-1', installed: true, device: 'CPU', measured: true }),
        expect.objectContaining({ id: 'svc-stt-1-flash', installed: false, device: 'CPU', measured: false }),
      ]),
    );
    expect(report.voices).toBeGreaterThan(0);
    expect(report.problems).toEqual([]);
    // The text form says the same in lines, and ends with "ok".
    const text = await run(process.execPath, [cli, 'doctor', '-c', config, '--models-dir', dir]);
    expect(text.stdout).toMatch(/^ {2}backends compiled in: .*CPU/mu);
    expect(text.stdout).toMatch(/^model svc-stt-1: .*would run on CPU$/mu);
    expect(text.stdout.trimEnd().endsWith('ok')).toBe(true);
  });

  it('doctor exits 1 naming the config problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-doctor-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ gpuDevice: -1 }));
    const failed = await run(process.execPath, [cli, 'doctor', '-c', config]).catch((error) => error);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^problem: the configuration: .*gpuDevice/mu);
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

  it('say takes the voice controls and writes the word times with --words', async () => {
    const output = join(temp, 'timed.wav');
    const words = join(temp, 'timed.json');
    const say = (...extra: string[]) =>
      run(process.execPath, [
        cli,
        'say',
        'Hello there. Bye now.',
        '-v',
        'en_US-fixture',
        '--voice-dir',
        voiceDir,
        ...extra,
      ]);
    await say('-o', output, '--words', words, '--length-scale', '2', '--sentence-silence', '0', '--noise-scale', '0');
    const timed = JSON.parse(readFileSync(words, 'utf8')) as Array<{ word: string; start: number; end: number }>;
    expect(timed.map((w) => w.word)).toEqual(['Hello', 'there', 'Bye', 'now']);
    // 44-byte header, 16-bit samples: the last word ends within the audio.
    const seconds = (readFileSync(output).length - 44) / 2 / 22050;
    expect(timed.at(-1)?.end).toBeLessThanOrEqual(seconds);
    const error = await say('-o', join(temp, 'bad.wav'), '--noise-w', '12').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr).toMatch(/noiseW must be between 0 and 10/);
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
    // A near miss gets the closest ids.
    const near = await run(process.execPath, [
      cli,
      'say',
      'Hi.',
      '-v',
      'fixture',
      '--voice-dir',
      voiceDir,
      '-o',
      output,
    ]).catch((e: unknown) => e as { code: number; stderr: string });
    expect(near).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/"fixture" \(did you mean .*"en_US-fixture"/u),
    });
  });

  it("say takes -f ogg (Opus in Ogg, as -o x.ogg), and speaks a --file past the API's 5,000 characters", async () => {
    const text = join(temp, 'long.txt');
    // 6,000 characters: over the API's limit, which protects a server, not a command line.
    writeFileSync(text, 'Hi there. '.repeat(600));
    const output = join(temp, 'long.ogg');
    await run(process.execPath, [
      cli,
      'say',
      '--file',
      text,
      '-f',
      'ogg',
      '-v',
      'en_US-fixture',
      '--voice-dir',
      voiceDir,
      '-o',
      output,
    ]);
    const ogg = readFileSync(output);
    expect(ogg.toString('ascii', 0, 4)).toBe('OggS');
    expect(ogg.includes(Buffer.from('OpusHead'))).toBe(true);
  });

  it('say refuses an output extension it would not honour, and a --format the extension contradicts', async () => {
    const say = (...args: string[]) =>
      run(process.execPath, [cli, 'say', 'Hi.', '-v', 'en_US-fixture', '--voice-dir', voiceDir, ...args]).catch(
        (e: unknown) => e as { code: number; stderr: string },
      );
    expect(await say('-o', join(temp, 'x.m4a'))).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/cannot tell the format of .*x\.m4a from "\.m4a"/u),
    });
    expect(await say('-f', 'wav', '-o', join(temp, 'x.mp3'))).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/-f wav does not match the extension of .*x\.mp3 \(mp3\)/u),
    });
    await say('-o', join(temp, 'speech.aac'));
    // ADTS frames start with 0xFFF sync bits.
    const aac = readFileSync(join(temp, 'speech.aac'));
    expect([aac[0], (aac[1] as number) & 0xf0]).toEqual([0xff, 0xf0]);
  });

  it('voices with nothing installed says how to get one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'voxmill-novoices-'));
    const { stdout, stderr } = await run(process.execPath, [cli, 'voices', '--voice-dir', empty]);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/no voices installed in .*voxmill models pull svc-tts-1/u);
  });

  it('voices --json lists the installed voices', async () => {
    const { stdout } = await run(process.execPath, [cli, 'voices', '--json', '--voice-dir', voiceDir]);
    const voices = JSON.parse(stdout) as Array<{ id: string }>;
    expect(voices.map((v) => v.id)).toContain('en_US-fixture_multi#carol');
  });
});
