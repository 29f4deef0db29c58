#!/usr/bin/env node
// What hostile uploads cost: the NaN/Inf float WAVs that crashed whisper's DTW, a WAV claiming 7 Hz and 9,000 s of
// silent FLAC (decompression bombs). Each file goes through the library (Speech.transcribe with word timestamps on
// the random-weight tiny.en fixture, DTW on) and over HTTP (a fresh createSpeechServer per file, default limits), in
// child processes so every peak RSS (VmHWM) is that file's alone. Prints the answer, the time and the peak RSS.
// The library calls pass the HTTP handler's default per-request limit (limits.maxAudioSeconds, 2 hours) as
// maxDurationSeconds, so both paths answer the same question: the library's own default (3 hours) would transcribe
// all 9,000 s of silence, as asked.
//
//   node bench/hostile.mjs [--only library|http]     (`--help` prints the flags)
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, collectOutput, distEntry, ensureDist, flag, ownMemory, root } from './lib.mjs';

const model = join(root, 'test', 'fixtures', 'models', 'ggml-tiny.en-random.bin');
const engineOptions = { models: { 'svc-stt-1': model }, vadModel: null };

/** A 16 kHz mono IEEE-float WAV (32- or 64-bit) of `seconds`, every sample `value`. */
function floatWav(value, seconds, bits) {
  const count = 16000 * seconds;
  const bytes = bits / 8;
  const data = Buffer.alloc(count * bytes);
  for (let i = 0; i < count; i++) {
    if (bits === 32) data.writeFloatLE(value, i * 4);
    else data.writeDoubleLE(value, i * 8);
  }
  return wav(3, 16000, bits, data);
}

function wav(format, rate, bits, data) {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(format, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE((rate * bits) / 8, 28);
  header.writeUInt16LE(bits / 8, 32);
  header.writeUInt16LE(bits, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

function makeFiles(dir) {
  const files = {
    'nan-f32.wav': floatWav(Number.NaN, 2, 32),
    'nan-f64.wav': floatWav(Number.NaN, 2, 64),
    'inf-f32.wav': floatWav(Number.POSITIVE_INFINITY, 2, 32),
    'minus-inf-f64.wav': floatWav(Number.NEGATIVE_INFINITY, 2, 64),
    'huge-f32.wav': floatWav(3e38, 2, 32),
    // 128 KB of 16-bit samples declared at 7 Hz: 9,143 s once resampled to 16 kHz.
    '7hz.wav': wav(1, 7, 16, Buffer.alloc(128_000, 0x10)),
  };
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  const flac = join(dir, 'silence-9000s.flac');
  const made = spawnSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'anullsrc=r=16000:cl=mono',
    '-t',
    '9000',
    '-c:a',
    'flac',
    '-compression_level',
    '12',
    flac,
  ]);
  if (made.status !== 0) throw new Error(`ffmpeg could not make the silent FLAC: ${made.stderr}`);
  return [...Object.keys(files), 'silence-9000s.flac'].map((name) => join(dir, name));
}

async function childLibrary(file) {
  const { createSpeech } = await import(distEntry);
  const speech = createSpeech(engineOptions);
  const started = performance.now();
  let answer;
  try {
    const result = await speech.transcribe(file, {
      timestamps: 'word',
      temperatureIncrement: 0,
      threads: 1,
      maxDurationSeconds: 7200,
    });
    answer = `ok: ${result.duration.toFixed(0)} s, ${result.words?.length ?? 0} words`;
  } catch (error) {
    answer = `${error.name} ${error.code}`;
  }
  const ms = performance.now() - started;
  await speech.close();
  process.stdout.write(`${JSON.stringify({ answer, ms, hwmKb: ownMemory().hwmKb })}\n`);
}

async function childServer() {
  const { createSpeech, createSpeechServer } = await import(distEntry);
  const server = createSpeechServer({ speech: createSpeech(engineOptions), auth: false });
  const { port } = await server.listen(0, '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

function runChild(args) {
  const proc = spawn(process.execPath, [new URL(import.meta.url).pathname, '--child', ...args], { cwd: root });
  return { proc, output: collectOutput(proc) };
}

async function library(file) {
  const { proc, output } = runChild(['library', file]);
  const code = await new Promise((resolve) => proc.on('close', (c, signal) => resolve(signal ?? c)));
  if (code !== 0) return { answer: `child died: ${code}`, ms: Number.NaN, hwmKb: Number.NaN };
  return JSON.parse(output.stdout.trim());
}

async function overHttp(file) {
  const { proc, output } = runChild(['server']);
  try {
    for (let i = 0; i < 200 && !output.stdout.includes('\n'); i++) await new Promise((r) => setTimeout(r, 50));
    const { port } = JSON.parse(output.stdout.split('\n')[0]);
    const before = memoryOf(proc.pid);
    const form = new FormData();
    form.set('model', 'svc-stt-1');
    form.set('timestamps', 'word');
    form.set('file', new Blob([readFileSync(file)]), 'upload');
    const started = performance.now();
    let answer;
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/transcriptions`, { method: 'POST', body: form });
      const body = await response.json();
      answer = response.ok ? `200: ${body.duration?.toFixed(0)} s` : `${response.status} ${body.error?.code}`;
    } catch (error) {
      answer = `no answer: ${error.message}`;
    }
    const ms = performance.now() - started;
    const after = proc.exitCode === null ? memoryOf(proc.pid) : { hwmKb: Number.NaN };
    return { answer, ms, hwmKb: after.hwmKb, baseKb: before.rssKb };
  } finally {
    proc.kill('SIGKILL');
  }
}

if (process.argv[2] === '--child') {
  if (process.argv[3] === 'library') await childLibrary(process.argv[4]);
  else await childServer();
} else {
  const { only } = benchArgs('node bench/hostile.mjs [--only library|http]', {
    only: flag.choice('only this path (default: both)', ['library', 'http']),
  }).settings;
  ensureDist();
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-hostile-'));
  try {
    const files = makeFiles(dir);
    const mb = (kb) => (Number.isFinite(kb) ? `${(kb / 1024).toFixed(0)} MB` : '-');
    console.log('| file | size | path | answer | time | peak RSS |');
    console.log('| --- | --: | --- | --- | --: | --: |');
    for (const file of files) {
      const size = `${(readFileSync(file).length / 1024).toFixed(0)} KB`;
      const name = file.slice(dir.length + 1);
      if (only !== 'http') {
        const r = await library(file);
        console.log(`| ${name} | ${size} | library | ${r.answer} | ${(r.ms / 1000).toFixed(2)} s | ${mb(r.hwmKb)} |`);
      }
      if (only !== 'library') {
        const r = await overHttp(file);
        console.log(
          `| ${name} | ${size} | HTTP | ${r.answer} | ${(r.ms / 1000).toFixed(2)} s | ${mb(r.hwmKb)} (idle ${mb(r.baseKb)}) |`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
