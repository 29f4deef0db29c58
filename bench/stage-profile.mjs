#!/usr/bin/env node
// Where the time goes, stage by stage, against CTranslate2 on the same audio and weights (issue "Faster than
// faster-whisper"): whisper.cpp's own per-stage timings (whisper-cli, built from the addon's tree with its flags and
// its patch set: bench/build-whisper-cli.mjs --patched) and CTranslate2's, each stage timed on its own
// (scripts/peers/ct2_stages.py: faster-whisper's log-mel features, `encode`, `generate` on the encoder's output).
//
// whisper-cli runs the two ways a voxmill call runs (native/whisper-patches.cmake, patch 0002): `fa` (flash attention,
// no DTW: a call without word times) and `dtw` (-nfa -dtw: a call with word times, whose DTW adds a "prompt" pass).
// Stages: mel (the log-mel spectrogram), encode (the convolutions and the encoder), decode (whisper-cli's decode +
// batchd + prompt: every decoder pass, beams batched), sample (token sampling and beam bookkeeping). CTranslate2's
// decode includes its sampling. Medians of --repeats runs, interleaved; ratio = voxmill's / CTranslate2 int8's
// (above 1: voxmill slower).
//
//   node bench/stage-profile.mjs [--models tiny.en,base] [--files jfk.wav,4507-16021-0012.wav] [--threads 1,2]
//                                [--beams 1,5] [--repeats 3]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureWhisperCli } from './build-whisper-cli.mjs';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  peersPython,
  REAL_WHISPER_MODELS,
  realModels,
  root,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const MODELS = REAL_WHISPER_MODELS;
const csv = (help, defaultValue) => ({
  ...flag.string(help, { value: 'LIST', defaultText: defaultValue }),
  default: defaultValue,
  parse: (text) => text,
});
const { settings } = benchArgs('node bench/stage-profile.mjs [flags]', {
  models: flag.list('models', MODELS),
  files: csv('shared audio files', 'jfk.wav,4507-16021-0012.wav'),
  threads: csv('thread counts', '1,2'),
  beams: csv('beam sizes (1: greedy)', '1,5'),
  repeats: flag.integer('runs per configuration (median)', 3),
  python: flag.string("the peers' Python", { value: 'PATH' }),
});
const list = (text) => String(text).split(',').filter(Boolean);
// The addon's setting for OpenBLAS's idle threads (src/util/openblas-idle.ts), read from the build the benches use.
ensureDist();
const { OPENBLAS_THREAD_TIMEOUT } = await import(pathToFileURL(join(root, 'dist', 'util', 'openblas-idle.js')).href);

/** whisper-cli's per-stage timings (ms) from its log. */
function cliStages(cli, model, file, threads, beam, mode, dtwPreset) {
  const args = ['-m', model, '-f', file, '-t', String(threads), '-l', 'en', '-bs', String(beam), '-bo', '5'];
  args.push('-nf'); // no temperature fallback: one decode, as the CTranslate2 side
  if (mode === 'dtw') args.push('-nfa', '-dtw', dtwPreset);
  else args.push('-fa');
  // OpenBLAS's idle threads as the addon sets them when it loads; a value set by the caller stays.
  const env = { OPENBLAS_THREAD_TIMEOUT, ...process.env };
  const run = spawnSync(cli, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env });
  if (run.status !== 0) throw new Error(`whisper-cli failed: ${run.stderr.slice(-1000)}`);
  const time = (name) => Number(new RegExp(`${name} time =\\s+([\\d.]+) ms`).exec(run.stderr)?.[1] ?? 0);
  return {
    mel: time('mel'),
    encode: time('encode'),
    decode: time('decode') + time('batchd') + time('prompt'),
    sample: time('sample'),
    total: time('total') - time('load'),
  };
}

function ct2Stages(python, model, file, threads, beam, computeType) {
  const request = { model, file, compute_type: computeType, threads, beam_size: beam, repeats: 1 };
  const run = spawnSync(python, [join(root, 'scripts', 'peers', 'ct2_stages.py')], {
    input: JSON.stringify(request),
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`ct2_stages.py failed: ${run.stderr.slice(-1000)}`);
  const out = JSON.parse(run.stdout);
  return { mel: out.mel_ms, encode: out.encode_ms, decode: out.decode_ms, sample: 0, tokens: out.tokens };
}

async function main() {
  const models = realModels(settings.models.flatMap((m) => [MODELS[m].ggml, MODELS[m].ct2]));
  // voxmill's kernels (its patch set laid over the tree) in whisper-cli's harness, for its per-stage timings.
  const cli = ensureWhisperCli({ patched: true });
  const python = peersPython(settings.python);
  const rows = [];
  for (const name of settings.models) {
    for (const file of list(settings.files)) {
      for (const threads of list(settings.threads).map(Number)) {
        for (const beam of list(settings.beams).map(Number)) {
          const samples = { fa: [], dtw: [], int8: [], float32: [] };
          for (let r = 0; r < settings.repeats; r++) {
            const audio = sharedAudio(file);
            samples.fa.push(cliStages(cli, models[MODELS[name].ggml], audio, threads, beam, 'fa', MODELS[name].dtw));
            samples.dtw.push(cliStages(cli, models[MODELS[name].ggml], audio, threads, beam, 'dtw', MODELS[name].dtw));
            samples.int8.push(ct2Stages(python, models[MODELS[name].ct2], audio, threads, beam, 'int8'));
            samples.float32.push(ct2Stages(python, models[MODELS[name].ct2], audio, threads, beam, 'float32'));
          }
          const med = (runs) =>
            Object.fromEntries(Object.keys(runs[0]).map((key) => [key, median(runs.map((run) => run[key]))]));
          const row = { model: name, file, threads, beam };
          for (const [engine, runs] of Object.entries(samples)) row[engine] = med(runs);
          for (const engine of ['int8', 'float32'])
            row[engine].total = row[engine].mel + row[engine].encode + row[engine].decode;
          rows.push(row);
          const f = (ms) => String(Math.round(ms)).padStart(6);
          const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : '-').padStart(5);
          process.stdout.write(
            `${name} ${file} t${threads} beam ${beam}: tokens ${row.int8.tokens}\n` +
              '            mel encode decode sample  total\n' +
              ['fa', 'dtw', 'int8', 'float32']
                .map((e) => {
                  const s = row[e];
                  return `  ${e.padEnd(8)}${f(s.mel)}${f(s.encode)}${f(s.decode)}${f(s.sample)}${f(s.total)}`;
                })
                .join('\n') +
              `\n  fa/int8 ${ratio(row.fa.mel, row.int8.mel)} ${ratio(row.fa.encode, row.int8.encode)} ` +
              `${ratio(row.fa.decode + row.fa.sample, row.int8.decode)}        ${ratio(row.fa.total, row.int8.total)}\n`,
          );
        }
      }
    }
  }
  const out = writeResults('stage-profile', { machine: machineFacts(), commit: gitCommit(), settings, rows });
  process.stdout.write(`raw results: ${out}\n`);
}

runMain('stage-profile', main);
