#!/usr/bin/env node
// Several processes transcribing at once on one machine (a cluster of Node workers, two apps on one host): does the
// machine's throughput hold, or do the processes' compute threads starve one another? Each process is a fresh Node
// with its own engine at the defaults (its own CPU budget: cores - 1 threads, and the extra thread lent to a lone
// call, so on 2 cores each process computes with 2 threads), real tiny.en, beam 5, VAD off.
//
//   npm run bench:processes [-- --processes 1,2,4] [-- --calls 4] [-- --compare /path/to/other/voxmill.node]
//
// Per process count P: P processes start together; each loads the model, waits for the others (a file barrier), then
// transcribes the LibriSpeech clip (10.4 s) `--calls` times in a row. Reported: the median call of all processes,
// the wall time from the barrier to the last call's end, and the slowdown = that wall / (P x the wall of one process
// alone, measured in the same run). 1 means running at once costs nothing against running one after another; the
// number of threads beyond the cores is what it tests. `--compare` runs every case again with another build of the
// addon (VOXMILL_ADDON_PATH), e.g. one without patch 0009. One sample per case: run it twice for the spread.
// Results: bench/out/processes-<timestamp>.json.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  integerArg,
  isEntry,
  loadAverageText,
  machineFacts,
  median,
  printChildResult,
  realModels,
  runMain,
  runNodeChild,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const self = fileURLToPath(import.meta.url);
const CLIP = '1089-134686-0000.flac';

/** The child: loads the model, marks itself ready, waits for `go`, then times `calls` transcriptions. */
async function child(task) {
  const voxmill = await import(distEntry);
  const clip = (await voxmill.decodeAudio(sharedAudio(CLIP))).samples;
  const speech = voxmill.createSpeech({
    models: { bench: { model: task.model, beamSize: 5 } },
    vadModel: null,
    idleUnloadMs: 0,
  });
  await speech.loadModel('bench');
  writeFileSync(join(task.dir, `ready-${task.index}`), '');
  // The parent writes `abort` when a sibling failed; a child whose parent died (re-parented) stops too.
  while (!existsSync(join(task.dir, 'go'))) {
    if (existsSync(join(task.dir, 'abort')) || process.ppid !== task.parent) process.exit(1);
    await sleep(5);
  }
  const callsMs = [];
  for (let i = 0; i < task.calls; i++) {
    const started = performance.now();
    await speech.transcribe(clip, { model: 'bench', language: 'en' });
    callsMs.push(performance.now() - started);
  }
  const endedAt = Date.now();
  await speech.close();
  printChildResult({ callsMs, endedAt });
}

/** P processes at once with one addon; the wall from `go` to the last call's end. */
async function runCase(processes, addon, settings, model) {
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-processes-'));
  try {
    // An empty VOXMILL_ADDON_PATH is unset (src/native.ts): "this build" never inherits the caller's.
    const env = { VOXMILL_ADDON_PATH: addon ?? '' };
    const task = { kind: 'processes', dir, calls: settings.calls, model, parent: process.pid };
    let failure;
    const children = Array.from({ length: processes }, (_, index) =>
      runNodeChild(self, { ...task, index }, { env }).catch((error) => {
        failure ??= error;
        writeFileSync(join(dir, 'abort'), '');
        return undefined;
      }),
    );
    const ready = () => Array.from({ length: processes }, (_, i) => existsSync(join(dir, `ready-${i}`)));
    while (!ready().every(Boolean) && failure === undefined) await sleep(10);
    const go = Date.now();
    if (failure === undefined) writeFileSync(join(dir, 'go'), '');
    const results = await Promise.all(children);
    if (failure !== undefined) throw failure;
    const wallMs = Math.max(...results.map((r) => r.endedAt)) - go;
    return { processes, wallMs, medianCallMs: median(results.flatMap((r) => r.callsMs)) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const { settings } = benchArgs('npm run bench:processes [-- options]', {
    processes: {
      ...flag.string('process counts to run, comma-separated', { value: 'LIST' }),
      default: [1, 2, 4],
      defaultText: '1,2,4',
      parse: (text, name) => text.split(',').map((item) => integerArg(item.trim(), name, 1)),
    },
    calls: flag.integer('transcriptions per process', 4),
    compare: flag.string('another voxmill.node to run every case with as well', { value: 'PATH' }),
  });
  const counts = settings.processes;
  ensureDist();
  const model = realModels(['whisper-tiny.en'])['whisper-tiny.en'];
  const builds = [{ name: 'this build', addon: undefined }];
  if (settings.compare) builds.push({ name: settings.compare, addon: resolve(settings.compare) });
  const rows = [];
  for (const build of builds) {
    const alone = await runCase(1, build.addon, settings, model);
    for (const processes of counts) {
      const result = processes === 1 ? alone : await runCase(processes, build.addon, settings, model);
      const row = { build: build.name, ...result, slowdown: result.wallMs / (processes * alone.wallMs) };
      rows.push(row);
      process.stderr.write(`${JSON.stringify(row)} (${loadAverageText()})\n`);
    }
  }
  console.log(`\n${availableParallelism()} cores; ${settings.calls} calls of ${CLIP} per process, tiny.en, beam 5`);
  console.log('build | processes | median call ms | wall s | slowdown (wall / P x one alone)');
  for (const r of rows) {
    console.log(
      `${r.build} | ${r.processes} | ${r.medianCallMs.toFixed(0)} | ${(r.wallMs / 1000).toFixed(1)} | ` +
        `${r.slowdown.toFixed(2)}`,
    );
  }
  const file = writeResults('processes', { machine: machineFacts(), commit: gitCommit(), settings, rows });
  console.log(`\nresults: ${file}`);
}

if (isEntry(import.meta.url)) {
  const at = process.argv.indexOf('--child');
  if (at >= 0) await child(JSON.parse(process.argv[at + 1]));
  else runMain('processes', main);
}
