#!/usr/bin/env node
// Generates the test fixtures under test/fixtures/ (git-ignored). `npm test` runs it before vitest, so a
// second run must be a fast no-op: every file is written under a temporary name and renamed into place, so a
// file that exists is complete, and existing files are skipped.
//
//   models/ggml-{tiny.en,base.en,tiny}-random.bin  whisper models with the real shapes and random weights: the
//                                             header, mel filters and vocabulary of the shared for-tests
//                                             file (tiny: the multilingual one, so language detection and
//                                             language hints run), then every tensor whisper.cpp loads (f16 like the
//                                             published files). Compute cost equals the real model's; the
//                                             text they produce is meaningless.
//   audio/silence-60s.wav                     60 s of digital silence, 16 kHz mono s16
//   audio/jfk-*.{m4a,wav}, audio/jfk.{webm,aac} jfk.wav in other containers and formats (ffmpeg CLI)
//   voices/<voice>.onnx, <voice>.onnx.json    fixture Piper voices (scripts/lib/fixture-voices.mjs): Piper's
//                                             ONNX inputs and outputs and real-structured configs. The audio is
//                                             a deterministic tone of floor(ids * length_scale * 256) samples
//                                             under a sin(pi t / T) envelope; a Ceil feeding a CumSum gives
//                                             ceil(length_scale) frames per id for word timings. <voice> is
//                                             en_US-fixture-medium (22050 Hz, 220 Hz tone),
//                                             en_US-fixture-low (16000 Hz, 330 Hz),
//                                             en_US-fixture_multi-medium (22050 Hz, speakers alice, bob, carol,
//                                             dave = sid 0-3, 220 + 55 * sid Hz) or
//                                             de_DE-fixture-x_low (16000 Hz, espeak voice de, 247 Hz).
//   embeddings/fixture-speaker-embedding.onnx a speaker-embedding model with sherpa-onnx's contract (feats
//                                             [N,T,80] -> embs [N,16]): mean frame x a fixed projection
//   embeddings/fixture-speaker-segmentation.onnx a segmentation model with segmentation-3.0's contract (x
//                                             [N,1,160000] -> y [N,589,7]): speaker 1 wherever the audio is loud
//   bench-voices/en_US-fixture_heavy-medium.onnx(.json)
//                                             the 22050 Hz, 220 Hz tone of en_US-fixture-medium, computed
//                                             alongside an MLP that costs what a real Piper medium voice
//                                             costs on a CPU (real-time factor about 0.075 on one core),
//                                             for bench/tts.mjs. Kept out of voices/ so the voices tests
//                                             list stay the same.
//
// The shared test data is found at $VOXMILL_TEST_DATA, default ../shared beside the checkout.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixtureEmbeddingFiles } from './lib/fixture-embedding.mjs';
import { fixtureSegmentationFiles } from './lib/fixture-segmentation.mjs';
import { fixtureVoiceFiles, VOICES, voiceDir } from './lib/fixture-voices.mjs';
import { pcm16MonoWav } from './lib/wav.mjs';
import {
  elementCount,
  float32ToFloat16Bits,
  GGML_F16,
  GGML_F32,
  ggmlHeader,
  HEADER_BYTES,
  readWhisperGgmlHeader,
  tensorHeader,
  tensorRecordBytes,
  WhisperGgmlError,
} from './lib/whisper-ggml.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const sharedDir = resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared');
const fixturesDir = join(root, 'test', 'fixtures');

// Bump when the generated content changes: fixtures made by another version are made again.
const FIXTURES_VERSION = '5';
const versionFile = join(fixturesDir, '.version');

function fail(message) {
  console.error(`make-fixtures: ${message}`);
  process.exit(1);
}

if (!existsSync(join(sharedDir, 'models', 'MANIFEST.json'))) {
  fail(
    `test data not found at ${sharedDir} (no models/MANIFEST.json). Set VOXMILL_TEST_DATA to the shared ` +
      'test-data directory (default: ../shared beside the checkout).',
  );
}

const sameVersion = existsSync(versionFile) && readFileSync(versionFile, 'utf8').trim() === FIXTURES_VERSION;

/** True when `path` is there and (where known) has the expected size, from this fixtures version. */
function present(path, size) {
  if (!sameVersion || !existsSync(path)) return false;
  return size === undefined || statSync(path).size === size;
}

function tempName(path) {
  return `${path}.tmp-${process.pid}`;
}

/** Removes temporary files left by runs that were killed (their process is gone). */
function removeStaleTemps(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const match = /\.tmp-(\d+)$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    let alive = pid !== process.pid;
    try {
      if (alive) process.kill(pid, 0);
    } catch (error) {
      alive = error.code === 'EPERM';
    }
    if (!alive) rmSync(join(dir, name), { force: true });
  }
}

function sizeText(bytes) {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

function report(path, started) {
  const rel = path.slice(fixturesDir.length + 1);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`fixtures: made ${rel} (${sizeText(statSync(path).size)}, ${seconds} s)`);
}

// --- random numbers ---------------------------------------------------------------------------------------

/** FNV-1a, to turn a tensor's name into its seed (so content does not depend on write order). */
function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0 || 1;
}

/** Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9). */
function normalQuantile(p) {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239,
  ];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
      ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    );
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  );
}

// 65536 standard-normal quantiles: a random 16-bit index picks one, so one 32-bit draw gives two samples.
const NORMAL = new Float32Array(65536);
for (let k = 0; k < 65536; k++) NORMAL[k] = normalQuantile((k + 0.5) / 65536);

const WEIGHT_STD = 0.02;
const HALF_WEIGHTS = new Uint16Array(65536);
for (let k = 0; k < 65536; k++) HALF_WEIGHTS[k] = float32ToFloat16Bits(WEIGHT_STD * NORMAL[k]);

/** f16 weights, N(0, WEIGHT_STD), from an xorshift32 stream seeded by `seed`. */
function halfWeights(count, seed) {
  const out = new Uint16Array(count + (count & 1));
  let s = seed;
  for (let i = 0; i < out.length; i += 2) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = HALF_WEIGHTS[s & 0xffff];
    out[i + 1] = HALF_WEIGHTS[s >>> 16];
  }
  return Buffer.from(out.buffer, 0, count * 2);
}

/** f32 values mean + std * N(0, 1). */
function floatValues(count, seed, mean, std) {
  const out = new Float32Array(count);
  let s = seed;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = mean + std * NORMAL[s & 0xffff];
  }
  return Buffer.from(out.buffer);
}

/** Whisper's encoder positional embedding (sinusoids), as the real models have it. ne = [channels, length]. */
function sinusoids(channels, length) {
  const out = new Float32Array(channels * length);
  const half = channels / 2;
  const increment = Math.log(10000) / (half - 1);
  for (let t = 0; t < length; t++) {
    for (let c = 0; c < half; c++) {
      const angle = t * Math.exp(-increment * c);
      out[t * channels + c] = Math.sin(angle);
      out[t * channels + half + c] = Math.cos(angle);
    }
  }
  return Buffer.from(out.buffer);
}

// --- whisper ggml models ----------------------------------------------------------------------------------

/** Reads the shared for-tests file: hparams, and the bytes of the mel filters + vocabulary that follow them. */
function readBaseModel(path) {
  const file = readFileSync(path);
  try {
    const { hparams, tensorsStart } = readWhisperGgmlHeader(file, path);
    return { hparams, body: file.subarray(HEADER_BYTES, tensorsStart) };
  } catch (error) {
    if (error instanceof WhisperGgmlError) fail(error.message);
    throw error;
  }
}

/**
 * Every tensor whisper.cpp's whisper_model_load creates, in the order convert-pt-to-ggml.py writes them
 * (PyTorch state_dict order). `ne` is ggml order (fastest-varying first), `kind` picks type and values.
 */
function tensorList(hp) {
  const list = [];
  const add = (name, ne, kind) => list.push({ name, ne, kind });
  const a = hp.n_audio_state;
  const t = hp.n_text_state;
  const attention = (prefix, n) => {
    add(`${prefix}.query.weight`, [n, n], 'weight');
    add(`${prefix}.query.bias`, [n], 'bias');
    add(`${prefix}.key.weight`, [n, n], 'weight');
    add(`${prefix}.value.weight`, [n, n], 'weight');
    add(`${prefix}.value.bias`, [n], 'bias');
    add(`${prefix}.out.weight`, [n, n], 'weight');
    add(`${prefix}.out.bias`, [n], 'bias');
  };
  const norm = (prefix, n) => {
    add(`${prefix}.weight`, [n], 'norm');
    add(`${prefix}.bias`, [n], 'bias');
  };
  const mlp = (prefix, n) => {
    add(`${prefix}.0.weight`, [n, 4 * n], 'weight');
    add(`${prefix}.0.bias`, [4 * n], 'bias');
    add(`${prefix}.2.weight`, [4 * n, n], 'weight');
    add(`${prefix}.2.bias`, [n], 'bias');
  };

  add('encoder.positional_embedding', [a, hp.n_audio_ctx], 'sinusoids');
  add('encoder.conv1.weight', [3, hp.n_mels, a], 'weight');
  add('encoder.conv1.bias', [1, a], 'bias');
  add('encoder.conv2.weight', [3, a, a], 'weight');
  add('encoder.conv2.bias', [1, a], 'bias');
  for (let i = 0; i < hp.n_audio_layer; i++) {
    const block = `encoder.blocks.${i}`;
    attention(`${block}.attn`, a);
    norm(`${block}.attn_ln`, a);
    mlp(`${block}.mlp`, a);
    norm(`${block}.mlp_ln`, a);
  }
  norm('encoder.ln_post', a);

  add('decoder.positional_embedding', [t, hp.n_text_ctx], 'embedding');
  add('decoder.token_embedding.weight', [t, hp.n_vocab], 'weight');
  for (let i = 0; i < hp.n_text_layer; i++) {
    const block = `decoder.blocks.${i}`;
    attention(`${block}.attn`, t);
    norm(`${block}.attn_ln`, t);
    attention(`${block}.cross_attn`, t);
    norm(`${block}.cross_attn_ln`, t);
    mlp(`${block}.mlp`, t);
    norm(`${block}.mlp_ln`, t);
  }
  norm('decoder.ln', t);
  return list;
}

// Loader types with ftype = 1: 2-D+ weights and conv kernels f16; biases, norms, positional embeddings f32.
const typeOf = (kind) => (kind === 'weight' ? GGML_F16 : GGML_F32);

function tensorData(tensor, seed) {
  const count = elementCount(tensor.ne);
  switch (tensor.kind) {
    case 'weight':
      return halfWeights(count, seed);
    case 'bias':
      return floatValues(count, seed, 0, 0.01);
    case 'norm':
      return floatValues(count, seed, 1, 0.02);
    case 'embedding':
      return floatValues(count, seed, 0, 0.01);
    case 'sinusoids':
      return sinusoids(tensor.ne[0], tensor.ne[1]);
    default:
      throw new Error(`unknown tensor kind ${tensor.kind}`);
  }
}

const MODELS = [
  { name: 'tiny.en', base: 'for-tests-ggml-tiny.en.bin', dims: { state: 384, head: 6, layer: 4 } },
  { name: 'base.en', base: 'for-tests-ggml-tiny.en.bin', dims: { state: 512, head: 8, layer: 6 } },
  { name: 'tiny', base: 'for-tests-ggml-tiny.bin', dims: { state: 384, head: 6, layer: 4 } },
];

function modelPlan(model, base) {
  const { state, head, layer } = model.dims;
  const hparams = {
    ...base.hparams,
    n_audio_state: state,
    n_audio_head: head,
    n_audio_layer: layer,
    n_text_state: state,
    n_text_head: head,
    n_text_layer: layer,
    ftype: GGML_F16,
  };
  const tensors = tensorList(hparams);
  let size = HEADER_BYTES + base.body.length;
  for (const tensor of tensors) size += tensorRecordBytes(tensor.name, tensor.ne, typeOf(tensor.kind));
  const path = join(fixturesDir, 'models', `ggml-${model.name}-random.bin`);
  return { model, base, hparams, tensors, size, path };
}

function writeModel(plan, base) {
  const started = performance.now();
  const temp = tempName(plan.path);
  const fd = openSync(temp, 'w');
  try {
    writeSync(fd, ggmlHeader(plan.hparams));
    writeSync(fd, base.body);
    for (const tensor of plan.tensors) {
      writeSync(fd, tensorHeader(tensor.name, tensor.ne, typeOf(tensor.kind)));
      const data = tensorData(tensor, hash32(`voxmill ${plan.model.name} ${tensor.name}`));
      for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset);
    }
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  const written = statSync(temp).size;
  if (written !== plan.size) {
    rmSync(temp, { force: true });
    throw new Error(`${plan.path}: wrote ${written} bytes, expected ${plan.size}`);
  }
  renameSync(temp, plan.path);
  report(plan.path, started);
}

// --- audio ------------------------------------------------------------------------------------------------

function silenceWav(seconds, rate) {
  return pcm16MonoWav(new Float32Array(seconds * rate), rate);
}

/** Top-level MP4 box types in file order. */
function topLevelBoxes(file) {
  const types = [];
  let offset = 0;
  while (offset + 8 <= file.length) {
    let size = file.readUInt32BE(offset);
    const type = file.toString('latin1', offset + 4, offset + 8);
    if (size === 1) size = Number(file.readBigUInt64BE(offset + 8));
    else if (size === 0) size = file.length - offset;
    if (size < 8) break;
    types.push(type);
    offset += size;
  }
  return types;
}

function moovOrder(expect) {
  return (path) => {
    const boxes = topLevelBoxes(readFileSync(path));
    const moov = boxes.indexOf('moov');
    const mdat = boxes.indexOf('mdat');
    if (moov < 0 || mdat < 0) return `no moov/mdat box (top-level boxes: ${boxes.join(' ')})`;
    const order = moov < mdat ? 'moov-first' : 'moov-last';
    return order === expect ? null : `expected ${expect}, got ${order} (top-level boxes: ${boxes.join(' ')})`;
  };
}

const JFK_JOBS = [
  {
    file: 'jfk-moov-end.m4a',
    args: ['-c:a', 'aac', '-b:a', '64k', '-f', 'ipod'],
    check: moovOrder('moov-last'),
  },
  {
    file: 'jfk-faststart.m4a',
    args: ['-c:a', 'aac', '-b:a', '64k', '-movflags', '+faststart', '-f', 'ipod'],
    check: moovOrder('moov-first'),
  },
  { file: 'jfk-f32.wav', args: ['-c:a', 'pcm_f32le', '-f', 'wav'] },
  { file: 'jfk-8k.wav', args: ['-ar', '8000', '-ac', '1', '-c:a', 'pcm_s16le', '-f', 'wav'] },
  { file: 'jfk-48k-stereo.wav', args: ['-ar', '48000', '-ac', '2', '-c:a', 'pcm_s16le', '-f', 'wav'] },
  { file: 'jfk.webm', args: ['-ar', '48000', '-c:a', 'libopus', '-b:a', '32k', '-f', 'webm'] },
  { file: 'jfk.aac', args: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'] },
];

function checkFfmpeg() {
  const probe = spawnSync('ffmpeg', ['-hide_banner', '-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    fail(
      'ffmpeg is needed to make the audio fixtures and was not found on PATH (Debian/Ubuntu: apt-get install ffmpeg)',
    );
  }
}

function ffmpegJob(input, job) {
  const path = join(fixturesDir, 'audio', job.file);
  const temp = tempName(path);
  const started = performance.now();
  const args = [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-i',
    input,
    '-map_metadata',
    '-1',
    '-vn',
    ...job.args,
    '-fflags',
    '+bitexact',
    '-flags:a',
    '+bitexact',
    temp,
  ];
  return new Promise((resolvePromise, reject) => {
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const problem = code !== 0 ? `ffmpeg exited with ${code}: ${stderr.trim()}` : job.check?.(temp);
      if (problem) {
        rmSync(temp, { force: true });
        reject(new Error(`${job.file}: ${problem}`));
        return;
      }
      renameSync(temp, path);
      report(path, started);
      resolvePromise();
    });
  });
}

// --- main -------------------------------------------------------------------------------------------------

async function main() {
  const modelsDir = join(fixturesDir, 'models');
  const audioDir = join(fixturesDir, 'audio');
  const voiceDirs = [...new Set([...VOICES.map(voiceDir), 'embeddings'])].map((dir) => join(fixturesDir, dir));

  const jfk = join(sharedDir, 'audio', 'jfk.wav');
  const jobs = JFK_JOBS.filter((job) => !present(join(audioDir, job.file)));
  const silencePath = join(audioDir, 'silence-60s.wav');
  const silence = silenceWav(60, 16000);
  const needSilence = !present(silencePath, silence.length);

  const bases = new Map();
  const baseOf = (file) => {
    const path = join(sharedDir, 'models', 'whisper', file);
    if (!existsSync(path)) fail(`${path} is missing from the shared test data`);
    if (!bases.has(file)) bases.set(file, readBaseModel(path));
    return bases.get(file);
  };
  const plans = MODELS.map((model) => modelPlan(model, baseOf(model.base))).filter(
    (plan) => !present(plan.path, plan.size),
  );

  const voiceFiles = [...fixtureVoiceFiles(sharedDir), ...fixtureEmbeddingFiles(), ...fixtureSegmentationFiles()]
    .map((file) => ({ ...file, path: join(fixturesDir, file.dir, file.name) }))
    .filter((file) => !present(file.path, file.data.length));

  if (jobs.length === 0 && !needSilence && plans.length === 0 && voiceFiles.length === 0) return;

  mkdirSync(modelsDir, { recursive: true });
  mkdirSync(audioDir, { recursive: true });
  for (const dir of voiceDirs) mkdirSync(dir, { recursive: true });
  removeStaleTemps(modelsDir);
  removeStaleTemps(audioDir);
  for (const dir of voiceDirs) removeStaleTemps(dir);

  // ffmpeg runs in child processes while the models are generated here.
  let encoding = Promise.resolve();
  if (jobs.length > 0) {
    if (!existsSync(jfk)) fail(`${jfk} is missing from the shared test data`);
    checkFfmpeg();
    encoding = Promise.allSettled(jobs.map((job) => ffmpegJob(jfk, job))).then((results) => {
      const errors = results.filter((result) => result.status === 'rejected').map((result) => result.reason.message);
      if (errors.length > 0) throw new Error(errors.join('\n'));
    });
  }

  if (needSilence) {
    const started = performance.now();
    writeFileSync(tempName(silencePath), silence);
    renameSync(tempName(silencePath), silencePath);
    report(silencePath, started);
  }
  for (const file of voiceFiles) {
    const started = performance.now();
    const { path } = file;
    writeFileSync(tempName(path), file.data);
    renameSync(tempName(path), path);
    report(path, started);
  }
  for (const plan of plans) writeModel(plan, plan.base);

  await encoding;
  writeFileSync(versionFile, `${FIXTURES_VERSION}\n`);
}

main().catch((error) => fail(error instanceof Error ? error.message : String(error)));
