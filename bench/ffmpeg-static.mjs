#!/usr/bin/env node
// The addon with FFmpeg built in (scripts/static-ffmpeg.mjs: only voxmill's components, x86 SIMD when nasm was there)
// against the same addon linked to the system's FFmpeg (Debian 12's 5.1 packages): decoding
// and encoding speed, and each one's memory after loading. Both addons run in fresh child processes, one after the
// other, their order alternating per repeat; each ratio (static / system) is the median of the per-repeat ratios.
//
//   node bench/ffmpeg-static.mjs [--repeats N]     default 5
//
// The system build is made first when missing (VOXMILL_FFMPEG=system into build-system-ffmpeg/, about 2 minutes).
// Decoded: the shared clips in every input format (jfk as wav, mp3, flac, ogg, opus; the m4a and webm fixtures) and
// gb0.wav (127 s), each decoded to 16 kHz mono as a transcription does. Encoded: 60 s of the decoded gb0 speech as
// mp3, opus, aac, flac and wav. Raw results: bench/out/ffmpeg-static-<timestamp>.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const repeatsAt = process.argv.indexOf('--repeats');
const repeats = repeatsAt > 0 ? Number(process.argv[repeatsAt + 1]) : 5;
if (!Number.isInteger(repeats) || repeats < 1) {
  console.error('--repeats must be a positive integer');
  process.exit(2);
}
const shared = resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared');
const clips = [
  ...['jfk.wav', 'jfk.mp3', 'jfk.flac', 'jfk.ogg', 'jfk.opus', 'gb0.wav'].map((name) => join(shared, 'audio', name)),
  ...['jfk-faststart.m4a', 'jfk.webm'].map((name) => join(root, 'test', 'fixtures', 'audio', name)),
];
for (const clip of clips) {
  if (!existsSync(clip)) {
    console.error(`missing ${clip} (VOXMILL_TEST_DATA, npm run fixtures)`);
    process.exit(2);
  }
}

const addons = {
  static: join(root, 'build', 'Release', 'voxmill.node'),
  system: join(root, 'build-system-ffmpeg', 'Release', 'voxmill.node'),
};
if (!existsSync(addons.system)) {
  console.error('building the system-FFmpeg addon into build-system-ffmpeg/ ...');
  const built = spawnSync(process.execPath, [join(root, 'scripts', 'build-native.mjs'), '--force'], {
    env: { ...process.env, VOXMILL_FFMPEG: 'system', VOXMILL_BUILD_DIR: 'build-system-ffmpeg' },
    stdio: 'inherit',
  });
  if (built.status !== 0) process.exit(1);
}

// One child: every clip decoded (twice: the first warms the page cache and the code), then encoded; times in ms.
const child = `
  const { readFileSync } = require('node:fs');
  const { performance } = require('node:perf_hooks');
  const clips = JSON.parse(process.argv[1]);
  (async () => {
    const { decodeAudio } = await import(${JSON.stringify(join(root, 'dist', 'index.js'))});
    const { encodeAudio } = await import(${JSON.stringify(join(root, 'dist', 'audio', 'encode.js'))});
    const linkage = (await import(${JSON.stringify(join(root, 'dist', 'native.js'))})).native().versions().ffmpegLinkage;
    const result = { linkage, decodeMs: {}, encodeMs: {}, rssMb: 0 };
    let speech;
    for (const clip of clips) {
      const bytes = readFileSync(clip);
      await decodeAudio(bytes);
      const started = performance.now();
      const decoded = await decodeAudio(bytes);
      result.decodeMs[clip.split('/').pop()] = performance.now() - started;
      if (clip.endsWith('gb0.wav')) speech = decoded.samples.subarray(0, 16000 * 60);
    }
    for (const format of ['mp3', 'opus', 'aac', 'flac', 'wav']) {
      await encodeAudio(speech.subarray(0, 16000), { format, inputSampleRate: 16000 });
      const started = performance.now();
      await encodeAudio(speech, { format, inputSampleRate: 16000 });
      result.encodeMs[format] = performance.now() - started;
    }
    result.rssMb = process.memoryUsage().rss / 1048576;
    console.log(JSON.stringify(result));
  })().catch((error) => { console.error(error); process.exit(1); });
`;

function measure(addon) {
  const run = spawnSync(process.execPath, ['-e', child, JSON.stringify(clips)], {
    env: { ...process.env, VOXMILL_ADDON_PATH: addon },
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`child with ${addon} failed: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

const runs = [];
for (let repeat = 0; repeat < repeats; repeat++) {
  const order = repeat % 2 === 0 ? ['static', 'system'] : ['system', 'static'];
  const pair = {};
  for (const side of order) pair[side] = measure(addons[side]);
  if (pair.static.linkage !== 'static' || pair.system.linkage !== 'system') {
    throw new Error(`linkage mix-up: ${pair.static.linkage} / ${pair.system.linkage}`);
  }
  runs.push(pair);
}

const rows = [];
for (const kind of ['decodeMs', 'encodeMs']) {
  for (const name of Object.keys(runs[0].static[kind])) {
    rows.push({
      what: `${kind === 'decodeMs' ? 'decode' : 'encode'} ${name}`,
      staticMs: median(runs.map((run) => run.static[kind][name])),
      systemMs: median(runs.map((run) => run.system[kind][name])),
      ratio: median(runs.map((run) => run.static[kind][name] / run.system[kind][name])),
    });
  }
}
rows.push({
  what: 'RSS after the work (MB)',
  staticMs: median(runs.map((run) => run.static.rssMb)),
  systemMs: median(runs.map((run) => run.system.rssMb)),
  ratio: median(runs.map((run) => run.static.rssMb / run.system.rssMb)),
});
console.log(`static FFmpeg / system FFmpeg, median of ${repeats} (ratio < 1: the static build is faster or smaller)`);
console.log('| what | static | system | ratio |\n| --- | --: | --: | --: |');
for (const row of rows) {
  console.log(`| ${row.what} | ${row.staticMs.toFixed(1)} | ${row.systemMs.toFixed(1)} | ${row.ratio.toFixed(2)} |`);
}
mkdirSync(join(root, 'bench', 'out'), { recursive: true });
const file = join(root, 'bench', 'out', `ffmpeg-static-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, `${JSON.stringify({ repeats, rows, runs }, null, 2)}\n`);
console.log(`raw: ${file}`);
