#!/usr/bin/env node
// Diarization quality on the generated development set (scripts/diarize-devset/make-devset.mjs: 2-6 speaker
// conversations from real clips, clean / noise / reverb) and the two real recordings in ../shared: DER per file
// (0.25 s collar, overlaps scored, the project's scorer, which equals pyannote.metrics' — test/accuracy/der-parity),
// whether the speaker count was right, and the real-time factor, per configuration.
//
//   node bench/diarize-devset.mjs [--config features|ge2e|both] [--diarization JSON] [--match TEXT] [--json]
//
// Used by bench/diarize.mjs (the recorded figures) and on its own to tune: --diarization overrides engine settings
// (say '{"threshold":0.5}'); --match scores only the files whose name contains TEXT.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { benchArgs, distEntry, ensureDist, flag, isEntry, root, sharedDir as shared, writeResults } from './lib.mjs';

export const devsetDir = join(root, 'test', 'fixtures', 'diarize-dev');
const vadModel = join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');

/** The models made by `npm run models:test` (name -> path), or an empty object. */
export function realModels() {
  const file = join(root, 'test', 'fixtures', 'real', 'models.json');
  if (!existsSync(file)) return {};
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** The GE2E encoder made by `npm run models:test`, or undefined. */
export function ge2eModel() {
  return realModels()['speaker-ge2e'];
}

/**
 * The files scored: the development set's in `dir` (with their manifest facts), then the real recordings. Another set
 * (`make-devset.mjs --seed N --out DIR`) checks settings on conversations they were not chosen on.
 */
export function devsetFiles(match = '', dir = devsetDir) {
  const manifestPath = join(dir, 'manifest.json');
  if (!existsSync(manifestPath)) {
    process.emitWarning(`no development set in ${dir} ('npm run devset:diarize' makes it): real recordings only`);
  }
  const manifest = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, 'utf8')) : { files: [] };
  const generated = manifest.files
    .filter((f) => !f.name.startsWith('long-'))
    .map((f) => ({
      name: f.name,
      wav: join(dir, `${f.name}.wav`),
      rttm: join(dir, `${f.name}.rttm`),
      speakers: f.speakerCount,
      variant: f.variant,
      generated: true,
    }));
  const real = [
    {
      name: 'pyannote_sample',
      wav: join(shared, 'audio', 'pyannote_sample.wav'),
      rttm: join(shared, 'audio', 'pyannote_sample.rttm'),
      speakers: 2,
      variant: 'real',
      generated: false,
    },
  ];
  return [...generated, ...real].filter((f) => f.name.includes(match));
}

/**
 * One file's score: DER and its parts as shares of the reference, and the speakers found against the truth's count.
 */
export function scoreTurns(voxmill, file, reference, turns) {
  const score = voxmill.scoreDiarization(reference, turns);
  return {
    file: file.name,
    variant: file.variant,
    generated: file.generated,
    der: score.der,
    missed: score.missed / score.total,
    falseAlarm: score.falseAlarm / score.total,
    confusion: score.confusion / score.total,
    speakers: file.speakers,
    found: new Set(turns.map((t) => t.speaker)).size,
  };
}

/**
 * pyannote.metrics 4.2.0's DER of the same turns (scripts/peers/der_peer.py in the peers venv: the 0.25 s collar each
 * side is pyannote's 0.5, overlaps scored), one per case; undefined without the peers venv.
 */
export function peerDers(cases) {
  const python = join(homedir(), '.cache', 'voxmill', 'peers', 'venv', 'bin', 'python');
  if (!existsSync(python)) return undefined;
  const input = JSON.stringify(
    cases.map(({ reference, hypothesis }) => ({ reference, hypothesis, collar: 0.5, skip_overlap: false })),
  );
  const result = spawnSync(python, [join(root, 'scripts', 'peers', 'der_peer.py')], {
    input,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`der_peer.py failed: ${result.stderr}`);
  return JSON.parse(result.stdout).map((r) => r.der);
}

/** Scores one configuration on `files`: per-file DER, count, seconds; and the summary. */
export async function scoreConfiguration(voxmill, { name, diarization }, files, log = () => {}) {
  const speech = voxmill.createSpeech({ vadModel, diarization, idleUnloadMs: 0 });
  try {
    await speech.diarize(join(shared, 'audio', 'jfk.wav')); // warm-up: worker, model
    const results = [];
    const cases = [];
    for (const file of files) {
      const reference = [...voxmill.parseRttm(readFileSync(file.rttm, 'utf8')).values()][0];
      const started = performance.now();
      const result = await speech.diarize(file.wav);
      const seconds = (performance.now() - started) / 1000;
      const row = {
        ...scoreTurns(voxmill, file, reference, result.turns),
        duration: result.duration,
        rtf: seconds / result.duration,
      };
      results.push(row);
      cases.push({ reference, hypothesis: result.turns });
      log(
        `${name.padEnd(9)} ${file.name.padEnd(24)} DER ${pct(row.der)} (miss ${pct(row.missed)}, fa ${pct(row.falseAlarm)}, ` +
          `conf ${pct(row.confusion)}) speakers ${row.found}/${row.speakers} RTF ${row.rtf.toFixed(3)}`,
      );
    }
    const peer = peerDers(cases);
    if (peer) {
      results.forEach((row, i) => {
        row.pyannoteDer = peer[i];
      });
    }
    return { name, diarization, results, summary: summarize(results) };
  } finally {
    await speech.close();
  }
}

const pct = (x) => `${(x * 100).toFixed(1).padStart(5)}%`;
const mean = (values) => (values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length);

function summarize(results) {
  const generated = results.filter((r) => r.generated);
  const byVariant = {};
  for (const variant of new Set(generated.map((r) => r.variant))) {
    const rows = generated.filter((r) => r.variant === variant);
    byVariant[variant] = {
      der: mean(rows.map((r) => r.der)),
      countRight: mean(rows.map((r) => (r.found === r.speakers ? 1 : 0))),
    };
  }
  const totalAudio = results.reduce((a, r) => a + r.duration, 0);
  return {
    files: generated.length,
    meanDer: mean(generated.map((r) => r.der)),
    countRight: mean(generated.map((r) => (r.found === r.speakers ? 1 : 0))),
    byVariant,
    pyannoteSample: results.find((r) => r.file === 'pyannote_sample')?.der,
    missed: mean(generated.map((r) => r.missed)),
    falseAlarm: mean(generated.map((r) => r.falseAlarm)),
    confusion: mean(generated.map((r) => r.confusion)),
    // Largest |ours - pyannote.metrics| over every file scored (both scorers on the same turns).
    scorerGap: results.some((r) => r.pyannoteDer !== undefined)
      ? Math.max(...results.map((r) => Math.abs(r.der - r.pyannoteDer)))
      : undefined,
    rtf: results.reduce((a, r) => a + r.rtf * r.duration, 0) / totalAudio,
  };
}

/**
 * The configurations by name: `features` (built-in), each encoder of `npm run models:test` over windows of the VAD's
 * speech (`ge2e`, `ecapa`, `campplus`), and each with the segmentation model (`ge2e+seg`, ...). `which`: a
 * comma-separated list of names, `both` (features and ge2e, the earlier default) or `all`.
 */
export function configurations(which, overrides = {}) {
  const models = realModels();
  const segmentation = models['speaker-segmentation'];
  const all = [{ name: 'features', diarization: { segmentationModel: null, ...overrides } }];
  for (const [name, key] of [
    ['ge2e', 'speaker-ge2e'],
    ['ecapa', 'speaker-ecapa'],
    ['campplus', 'speaker-campplus'],
  ]) {
    const embeddingModel = models[key];
    if (!embeddingModel) continue;
    all.push({ name, diarization: { embeddingModel, segmentationModel: null, ...overrides } });
    if (segmentation) {
      all.push({ name: `${name}+seg`, diarization: { embeddingModel, segmentationModel: segmentation, ...overrides } });
    }
  }
  const names = which === 'all' ? all.map((c) => c.name) : which === 'both' ? ['features', 'ge2e'] : which.split(',');
  const wanted = names.map((name) => {
    const found = all.find((c) => c.name === name);
    if (!found) throw new Error(`configuration ${name} is not available (the models come from 'npm run models:test')`);
    return found;
  });
  return wanted;
}

export function printSummary({ name, summary }) {
  const variants = Object.entries(summary.byVariant)
    .map(([v, s]) => `${v} ${pct(s.der)} / count ${pct(s.countRight)}`)
    .join(', ');
  console.log(
    `${name}: mean DER ${pct(summary.meanDer)} over ${summary.files} generated files (${variants}); speaker count right ${pct(summary.countRight)}; ` +
      `missed ${pct(summary.missed)}, false alarm ${pct(summary.falseAlarm)}, confusion ${pct(summary.confusion)}; ` +
      `pyannote_sample ${summary.pyannoteSample === undefined ? 'n/a' : pct(summary.pyannoteSample)}; RTF ${summary.rtf.toFixed(3)}` +
      (summary.scorerGap === undefined
        ? ''
        : `; pyannote.metrics agrees within ${(summary.scorerGap * 100).toFixed(3)} points`),
  );
}

if (isEntry(import.meta.url)) {
  const { settings } = benchArgs('node bench/diarize-devset.mjs [options]', {
    config: flag.string('configurations: NAME[,NAME...] of features, ge2e, ecapa, campplus, ge2e+seg, ...; both; all', {
      value: 'NAMES',
      defaultText: 'both',
    }),
    diarization: flag.json('engine diarization settings to override', {}),
    match: flag.string('only files whose name contains this', { value: 'TEXT', defaultText: 'all' }),
    devset: flag.string('the development set to score', { value: 'DIR', defaultText: 'test/fixtures/diarize-dev' }),
    variants: flag.string('only these variants (clean,noise,reverb,real)', { value: 'LIST', defaultText: 'all' }),
    quiet: flag.boolean('no per-file lines'),
    json: flag.boolean('print one JSON document'),
  });
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const variants = settings.variants?.split(',');
  const files = devsetFiles(settings.match ?? '', settings.devset ?? devsetDir).filter(
    (f) => !variants || variants.includes(f.variant),
  );
  const runs = [];
  for (const configuration of configurations(settings.config ?? 'both', settings.diarization)) {
    const run = await scoreConfiguration(
      voxmill,
      configuration,
      files,
      settings.quiet || settings.json ? () => {} : (line) => console.error(line),
    );
    runs.push(run);
    if (!settings.json) printSummary(run);
  }
  const out = writeResults('diarize-devset', { runs });
  if (settings.json) process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
  else console.log(`raw results: ${out}`);
}
