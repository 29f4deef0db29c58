#!/usr/bin/env node
// The addons the x64 release ships (zig for glibc 2.28, OpenBLAS bundled, FFmpeg built in; made by
// scripts/distro/matrix.sh or by hand): build-release-x64/ (VOXMILL_CPU=portable: AVX2, FMA, F16C, BMI2) and
// build-release-x64-v2/ (VOXMILL_CPU=x86-64-v2: SSE4.2, for CPUs without AVX2), against the one built here for this
// machine (build/Release: VOXMILL_CPU=native, OpenBLAS), transcribing the same audio with the same real model: wall
// time, each in a fresh process per repeat, their order rotating; each ratio (a build / native) is the median of the
// per-repeat ratios. --addon measures any other build beside them (an AVX-512 one, a gcc one: BENCHMARKS.md).
//
//   node bench/portable-addon.mjs [--model whisper-base|whisper-tiny.en] [--repeats N] [--audio FILE]
//                                 [--beam-size N] [--builds portable,x86-64-v2,native,<--addon names>] [--addon name=path]...
//   defaults: whisper-base, 3 repeats, gb0.wav (127 s) from the shared test data, the library's default decoding,
//   portable,x86-64-v2,native. Raw results: bench/out/portable-addon-<timestamp>.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const modelName = option('--model', 'whisper-base');
const repeats = Number(option('--repeats', '3'));
if (!Number.isInteger(repeats) || repeats < 1) {
  console.error('--repeats must be a positive integer');
  process.exit(2);
}
const beamSize = option('--beam-size', undefined);
if (beamSize !== undefined && !/^[1-9]\d*$/.test(beamSize)) {
  console.error('--beam-size must be a positive integer');
  process.exit(2);
}
const models = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'real', 'models.json'), 'utf8'));
const model = models[modelName];
const sharedAudio = join(resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared'), 'audio');
const audio = resolve(option('--audio', join(sharedAudio, 'gb0.wav')));
const warmUp = join(sharedAudio, 'jfk.wav');
const allAddons = {
  portable: join(root, 'build-release-x64', 'Release', 'voxmill.node'),
  'x86-64-v2': join(root, 'build-release-x64-v2', 'Release', 'voxmill.node'),
  native: join(root, 'build', 'Release', 'voxmill.node'),
};
// --addon name=path (repeatable): another build to measure, under that name.
process.argv.forEach((arg, i) => {
  if (arg !== '--addon') return;
  const [name, path] = (process.argv[i + 1] ?? '').split('=');
  if (!name || !path) {
    console.error('--addon takes name=path');
    process.exit(2);
  }
  allAddons[name] = resolve(path);
});
const sides = option('--builds', 'portable,x86-64-v2,native').split(',');
const unknown = sides.filter((side) => !(side in allAddons));
if (unknown.length > 0 || !sides.includes('native') || sides.length < 2) {
  console.error(
    `--builds: native and at least one of ${Object.keys(allAddons).join(', ')}; received ${sides.join(',')}`,
  );
  process.exit(2);
}
const addons = Object.fromEntries(sides.map((side) => [side, allAddons[side]]));
for (const path of [model, audio, warmUp, ...Object.values(addons)]) {
  if (!path || !existsSync(path)) {
    console.error(
      `missing ${path ?? modelName} (npm run models:test; bash scripts/distro/matrix.sh builds the release addons)`,
    );
    process.exit(2);
  }
}

const child = `
  const { performance } = require('node:perf_hooks');
  (async () => {
    const { createSpeech, cpuInfo } = await import(${JSON.stringify(join(root, 'dist', 'index.js'))});
    const speech = createSpeech({ models: { 'svc-stt-1': { model: process.argv[1] } }, cpuThreads: 2 });
    const options = process.argv[4] ? { beamSize: Number(process.argv[4]) } : {};
    await speech.transcribe(process.argv[3], options); // loads the model
    const started = performance.now();
    const { text } = await speech.transcribe(process.argv[2], options);
    const ms = performance.now() - started;
    await speech.close();
    const cpu = cpuInfo();
    console.log(JSON.stringify({ ms, words: text.split(/\\s+/).length, instructionSets: cpu.instructionSets, blas: cpu.blas }));
  })().catch((error) => { console.error(error); process.exit(1); });
`;
function measure(addon) {
  const run = spawnSync(process.execPath, ['-e', child, model, audio, warmUp, beamSize ?? ''], {
    env: { ...process.env, VOXMILL_ADDON_PATH: addon },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`${addon}: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}
const runs = [];
for (let repeat = 0; repeat < repeats; repeat++) {
  const run = {};
  // Each repeat starts one further along, so no build always runs first (or last).
  for (let i = 0; i < sides.length; i++) {
    const side = sides[(i + repeat) % sides.length];
    run[side] = measure(addons[side]);
  }
  runs.push(run);
  console.log(`repeat ${repeat + 1}: ${sides.map((side) => `${side} ${run[side].ms.toFixed(0)} ms`).join(', ')}`);
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const ratios = Object.fromEntries(
  sides
    .filter((side) => side !== 'native')
    .map((side) => [side, median(runs.map((run) => run[side].ms / run.native.ms))]),
);
console.log(`${modelName} on ${audio}, beam size ${beamSize ?? 'the default'}, median of ${repeats}:`);
for (const side of sides) {
  const r = runs[0][side];
  console.log(
    `  ${side}: ${median(runs.map((run) => run[side].ms)).toFixed(0)} ms (${r.instructionSets.join(' ')}; BLAS ${r.blas})`,
  );
}
for (const [side, ratio] of Object.entries(ratios)) console.log(`  ratio ${side} / native: ${ratio.toFixed(2)}`);
mkdirSync(join(root, 'bench', 'out'), { recursive: true });
const file = join(root, 'bench', 'out', `portable-addon-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ model: modelName, audio, beamSize: beamSize ?? null, repeats, ratios, runs }, null, 2)}\n`,
);
console.log(`raw: ${file}`);
