#!/usr/bin/env node
// A cold `voxmill say` against piper-tts's own CLI (`piper`, from the peers venv), same voice (en_US-joe-medium),
// same sentence: from process start to the WAV file written, each a fresh process, alternating one after the other
// (never at once), the order rotating per repeat. voxmill runs as an installed CLI does (`node dist/cli/main.js say`),
// with the voice's own weights and with `--model svc-tts-1-flash` (int8; its graph made before the repeats, as the
// first flash `say` caches it beside the voice). Both take every core (voxmill's `say` asks for them; piper-tts's
// onnxruntime does by default).
//
//   npm run bench:say-cold [-- --repeats 7]
//
// Needs `npm run models:test` (piper-joe-medium) and `bash scripts/peers-setup.sh` (the venv with piper-tts).
// Prints wall time and peak RSS per side (medians), and voxmill / piper per repeat (median and range): below 1,
// voxmill's cold start is shorter. Raw results go to bench/out/say-cold-<timestamp>.json.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  hasGnuTime,
  machineFacts,
  measureProcess,
  median,
  peersPython,
  realModels,
  root,
  rotate,
  runMain,
  spread,
  writeResults,
} from './lib.mjs';

const SENTENCE = 'The quick brown fox jumps over the lazy dog near the river bank.';
const SIDES = ['voxmill', 'voxmill-int8', 'piper'];

const FLAGS = {
  repeats: flag.integer('repeats: each runs one cold process per side', 5),
  python: flag.string('the peers venv Python', { value: 'PATH', defaultText: 'what scripts/peers-setup.sh prints' }),
};

async function main() {
  const { settings } = benchArgs('npm run bench:say-cold [-- options]', FLAGS, { quick: { repeats: 2 } });
  ensureDist();
  const model = realModels(['piper-joe-medium'])['piper-joe-medium'];
  const piper = join(dirname(peersPython(settings.python)), 'piper');
  const { editedVoiceModel } = await import(pathToFileURL(join(root, 'dist', 'tts', 'edited-voice.js')).href);
  await editedVoiceModel(model, { timed: false, int8: true });
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-say-cold-'));
  const gnuTime = hasGnuTime();
  const voxmillArgs = (out, extra) => [
    join(root, 'dist', 'cli', 'main.js'),
    'say',
    SENTENCE,
    '--voice',
    'en_US-joe',
    '--voice-dir',
    dirname(model),
    '-o',
    out,
    ...extra,
  ];
  const commands = {
    voxmill: (out) => [process.execPath, voxmillArgs(out, [])],
    'voxmill-int8': (out) => [process.execPath, voxmillArgs(out, ['--model', 'svc-tts-1-flash'])],
    piper: (out) => [piper, ['-m', model, '-f', out, '--', SENTENCE]],
  };
  const runs = [];
  try {
    // One of each first, not counted: the page cache holds the voice, Node and Python as it would on a used machine.
    for (const side of SIDES) {
      const [command, args] = commands[side](join(scratch, `warm-${side}.wav`));
      await measureProcess(command, args, { gnuTime, scratch });
    }
    for (let repeat = 0; repeat < settings.repeats; repeat++) {
      const results = {};
      for (const side of rotate(SIDES, repeat)) {
        const out = join(scratch, `${side}-${repeat}.wav`);
        const [command, args] = commands[side](out);
        const { wallMs, peakRssKb } = await measureProcess(command, args, { gnuTime, scratch });
        results[side] = { wallMs, peakRssKb, bytes: statSync(out).size };
      }
      runs.push(results);
      process.stdout.write(
        `[${repeat + 1}/${settings.repeats}] ${SIDES.map((s) => `${s} ${results[s].wallMs.toFixed(0)} ms`).join(', ')}\n`,
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const summary = Object.fromEntries(
    SIDES.map((side) => {
      const ratios = runs.map((r) => r[side].wallMs / r.piper.wallMs);
      return [
        side,
        {
          wallMs: median(runs.map((r) => r[side].wallMs)),
          peakRssMb: median(runs.map((r) => r[side].peakRssKb)) / 1024,
          ratio: { median: median(ratios), range: spread(ratios) },
        },
      ];
    }),
  );
  const machine = machineFacts();
  const rows = SIDES.map((side) => {
    const { wallMs, peakRssMb, ratio } = summary[side];
    const range = `${ratio.range[0].toFixed(2)}–${ratio.range[1].toFixed(2)}`;
    return `| ${side} | ${wallMs.toFixed(0)} | ${peakRssMb.toFixed(0)} | **${ratio.median.toFixed(2)}** (${range}) |`;
  });
  process.stdout.write(
    [
      `\nCold say of "${SENTENCE}", en_US-joe-medium, ${machine.cores} cores (${machine.cpu}); medians of ` +
        `${settings.repeats}; ratio to piper per repeat`,
      '| side | process start to WAV written, ms | peak RSS MB | ratio to piper |',
      '|---|--:|--:|--:|',
      ...rows,
      '',
    ].join('\n'),
  );
  const outFile = writeResults('say-cold', {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine,
    sentence: SENTENCE,
    settings,
    summary,
    runs,
  });
  process.stdout.write(`Raw results: ${outFile}\n`);
}

runMain('say-cold', main);
