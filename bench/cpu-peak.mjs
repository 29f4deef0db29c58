#!/usr/bin/env node
// How close whisper's encoder comes to this machine's floating-point peak, per build of the same whisper.cpp tree.
//
//   npm run bench:cpu-peak [-- --repeats 3] [-- --models tiny.en,base]
//
// 1. The peak: bench/native/fma-peak.cc compiled twice with g++ (-mavx2 -mfma, and -mavx512f when the CPU has it),
//    each the best of 5 rounds of independent FMA chains on one thread (16 with AVX-512, 12 with AVX2: its 16
//    registers hold no more without a spill): GFLOP/s for FP32.
// 2. The encoder's work for one 30 s window (1500 audio frames T, width d, L layers): the two input convolutions
//    (2·T'·80·d·3 with T' = 3000, and 2·T·d·d·3) and per layer 24·T·d² (the Q, K, V and output projections, 8·T·d²,
//    and the 4d-wide MLP, 16·T·d²) plus 4·T²·d (scores and the weighted sum). tiny.en (d 384, 4 layers): 36.9 GFLOP;
//    base (d 512, 6 layers): 87.4 GFLOP.
// 3. The encoder's time: whisper-cli from the same tree (bench/build-whisper-cli.mjs) on jfk.wav (one window),
//    1 thread, greedy, its `encode time` from whisper_print_timings; the median of --repeats runs. Builds compared:
//    portable (AVX2/FMA/F16C, no BLAS), native (-march=native), and native + OpenBLAS (a source build's default)
//    (VOXMILL_CPU=native VOXMILL_BLAS=openblas), all of upstream's tree; and `patched`, native + OpenBLAS with the
//    addon's patched sources laid over the tree (native/whisper-patches.cmake, as the last addon build wrote them):
//    `--builds native+openblas,patched` is the patch set's before and after on one machine.
// Fraction of peak = encoder FLOP / encoder seconds / the best peak of the ISA the build can use.
// Results: bench/out/cpu-peak-<timestamp>.json. Needs `npm run models:test` (real weights).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureWhisperCli } from './build-whisper-cli.mjs';
import {
  benchArgs,
  flag,
  gitCommit,
  isEntry,
  machineFacts,
  median,
  realModels,
  root,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const MODELS = {
  'tiny.en': { file: 'whisper-tiny.en', width: 384, layers: 4 },
  base: { file: 'whisper-base', width: 512, layers: 6 },
};
const BUILDS = {
  portable: { cpu: 'portable', blas: 'none', isa: 'avx2' },
  native: { cpu: 'native', blas: 'none', isa: 'best' },
  'native+openblas': { cpu: 'native', blas: 'openblas', isa: 'best' },
  // native+openblas with the addon's patched sources (native/whisper-patches.cmake's output in build/) laid over the
  // tree: against native+openblas, the patch set's share of the encoder's speed on the same machine, same flags.
  patched: { patched: true, cpu: 'native', blas: 'openblas', isa: 'best' },
};

/** FLOP of the encoder over one 30 s window (see the header). */
export function encoderFlop({ width: d, layers }) {
  const frames = 1500;
  const convolutions = 2 * 3000 * 80 * d * 3 + 2 * frames * d * d * 3;
  return convolutions + layers * (24 * frames * d * d + 4 * frames * frames * d);
}

function peak(scratch, isaFlags, name) {
  const exe = join(scratch, name);
  const build = spawnSync('g++', ['-O2', ...isaFlags, '-o', exe, join(root, 'bench', 'native', 'fma-peak.cc')], {
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`g++ could not build the FMA peak probe: ${build.stderr}`);
  const run = spawnSync(exe, { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${exe} failed: ${run.stderr}`);
  return JSON.parse(run.stdout).gflops;
}

function encodeMs(cli, model) {
  const args = ['-m', model, '-f', sharedAudio('jfk.wav'), '-t', '1', '-l', 'en', '-bs', '1', '-bo', '1', '-nt'];
  const run = spawnSync(cli, args, { encoding: 'utf8' });
  const match = /encode time =\s*([\d.]+) ms/.exec(run.stderr ?? '');
  if (run.status !== 0 || !match)
    throw new Error(`${cli} ${args.join(' ')} failed:\n${(run.stderr ?? '').slice(-2000)}`);
  return Number(match[1]);
}

async function main() {
  const { settings } = benchArgs('npm run bench:cpu-peak [-- options]', {
    repeats: flag.integer('whisper-cli runs per build and model (the median is kept)', 3),
    models: flag.list('real models (`npm run models:test`)', MODELS, ['tiny.en']),
    builds: flag.list('builds of whisper-cli to compare', BUILDS),
  });
  const models = realModels(settings.models.map((m) => MODELS[m].file));
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-fma-'));
  const hasAvx512 = spawnSync('grep', ['-qw', 'avx512f', '/proc/cpuinfo']).status === 0;
  const peaks = { avx2: peak(scratch, ['-mavx2', '-mfma'], 'fma-avx2') };
  if (hasAvx512) peaks.avx512 = peak(scratch, ['-mavx512f'], 'fma-avx512');
  rmSync(scratch, { recursive: true, force: true });
  const best = Math.max(...Object.values(peaks));
  console.log(
    `FP32 FMA peak, 1 thread: ${Object.entries(peaks)
      .map(([isa, g]) => `${isa} ${g} GFLOP/s`)
      .join(', ')}`,
  );
  const rows = [];
  const clis = Object.fromEntries(settings.builds.map((b) => [b, ensureWhisperCli(BUILDS[b])]));
  for (const name of settings.models) {
    const flop = encoderFlop(MODELS[name]);
    const times = Object.fromEntries(settings.builds.map((b) => [b, []]));
    // Interleaved: one run of every build per round, so a slow minute slows all of them.
    for (let r = 0; r < settings.repeats; r++) {
      for (const build of settings.builds) times[build].push(encodeMs(clis[build], models[MODELS[name].file]));
    }
    for (const build of settings.builds) {
      const ms = median(times[build]);
      const gflops = flop / (ms / 1000) / 1e9;
      const ceiling = BUILDS[build].isa === 'avx2' ? peaks.avx2 : best;
      rows.push({
        model: name,
        build,
        cpu: BUILDS[build].cpu,
        blas: BUILDS[build].blas,
        encoderGflop: flop / 1e9,
        encodeMs: ms,
        runs: times[build],
        gflops,
        peak: ceiling,
      });
    }
  }
  console.log('\nmodel | build | encoder GFLOP | encode ms (median) | GFLOP/s | fraction of peak');
  for (const r of rows) {
    console.log(
      `${r.model} | ${r.build} | ${r.encoderGflop.toFixed(1)} | ${r.encodeMs.toFixed(0)} | ${r.gflops.toFixed(1)} | ` +
        `${((100 * r.gflops) / r.peak).toFixed(0)} % of ${r.peak}`,
    );
  }
  const file = writeResults('cpu-peak', { machine: machineFacts(), commit: gitCommit(), peaks, rows });
  console.log(`\nresults: ${file}`);
}

if (isEntry(import.meta.url)) runMain('cpu-peak', main);
