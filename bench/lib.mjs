// Helpers every benchmark uses: the repository root and the shared test data, the command line (node:util
// parseArgs, with --help made from the flags), this process's memory, child processes (measured, or speaking the
// `@@result` line), medians and RSS drift, a dist/ that is not older than src/, the fixtures and real models a
// benchmark needs, and the raw-results file.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const distEntry = join(root, 'dist', 'index.js');
/** The shared test data: $VOXMILL_TEST_DATA, default ../shared beside the checkout. */
export const sharedDir = resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared');

/** A file of the shared test data's audio/ folder; throws when it is not there. */
export function sharedAudio(name) {
  const path = join(sharedDir, 'audio', name);
  if (!existsSync(path)) throw new Error(`${path} not found; set VOXMILL_TEST_DATA to the shared test-data folder`);
  return path;
}

// --- the command line -------------------------------------------------------------------------------------------

/**
 * Kinds of flag for benchArgs. Each has `help` (one line, or lines joined by \n) and a `default` (shown by --help,
 * or `defaultText` instead); a flag with a value has `value`, the word --help shows after it, and `parse(text,
 * name)`, which checks the text and throws naming the flag.
 */
export const flag = {
  boolean: (help) => ({ type: 'boolean', help }),
  integer: (help, defaultValue, { min = 1, defaultText } = {}) => ({
    type: 'string',
    value: 'N',
    help,
    default: defaultValue,
    defaultText,
    parse: (text, name) => integerArg(text, name, min),
  }),
  string: (help, { value = 'VALUE', defaultText } = {}) => ({ type: 'string', value, help, defaultText }),
  /** A JSON value (an options object, say). */
  json: (help, defaultValue, { defaultText } = {}) => ({
    type: 'string',
    value: 'JSON',
    help,
    default: defaultValue,
    defaultText: defaultText ?? JSON.stringify(defaultValue),
    parse: (text, name) => {
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`--${name} needs JSON, got ${text}`);
      }
    },
  }),
  /** A comma-separated list of whisper beam sizes, 1-8 (1 is greedy). */
  beamSizes: (help, defaultValue) => ({
    type: 'string',
    value: 'LIST',
    help,
    default: defaultValue,
    parse: (text, name) =>
      text.split(',').map((item) => {
        const n = Number(item);
        if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`--${name}: "${item}" is not a beam size 1-8`);
        return n;
      }),
  }),
  /** voxmill's decoderPrecision load option: full (the file's f16, the library's default) or int8 (patch 0013). */
  decoderPrecision: () =>
    flag.choice(
      "voxmill's decoderPrecision: full (its default: the file's f16) or int8 (q8_0 decoder, patch 0013)",
      ['full', 'int8'],
      'full',
    ),
  /** One of `choices`. */
  choice: (help, choices, defaultValue) => ({
    type: 'string',
    value: choices.join('|'),
    help,
    default: defaultValue,
    parse: (text, name) => {
      if (!choices.includes(text)) throw new Error(`--${name} needs ${choices.join(' or ')}, got "${text}"`);
      return text;
    },
  }),
  /** A comma-separated list of keys of `known`; by default all of them. */
  list: (help, known, defaultValue = Object.keys(known)) => ({
    type: 'string',
    value: 'LIST',
    help,
    default: defaultValue,
    defaultText: defaultValue.join(','),
    parse: (text, name) => {
      const items = text.split(',').map((item) => item.trim());
      for (const item of items) {
        if (!(item in known)) throw new Error(`--${name}: unknown "${item}" (known: ${Object.keys(known).join(', ')})`);
      }
      return items;
    },
  }),
};

const camelCase = (name) => name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

function helpText(usage, flags) {
  const rows = Object.entries(flags).map(([name, spec]) => {
    const left = `--${name}${spec.value ? ` ${spec.value}` : ''}`;
    const shown = spec.defaultText ?? (Array.isArray(spec.default) ? spec.default.join(',') : spec.default);
    const lines = `${spec.help}${shown === undefined ? '' : ` (default: ${shown})`}`.split('\n');
    return { left, lines };
  });
  const width = Math.max(...rows.map((row) => row.left.length)) + 2;
  const body = rows.flatMap(({ left, lines }) =>
    lines.map((line, i) => `  ${(i === 0 ? left : '').padEnd(width)}${line}`),
  );
  return `usage: ${usage}\n${body.join('\n')}\n`;
}

/**
 * A benchmark's flags, read with node:util parseArgs: `flags` maps each flag's name to a `flag.*` spec. Returns
 * the values under camelCase names (--beam-size: beamSize), the default where a flag is not given, and `given`, the
 * set of names given. `quick`: where --quick is given, values for the flags not given explicitly. --help (-h)
 * prints `usage: <usage>` and the flags, then exits 0; an unknown flag, a missing value or a bad one prints what
 * is wrong and the usage line, then exits 2.
 */
export function benchArgs(usage, flags, { quick, argv = process.argv.slice(2) } = {}) {
  const all = { ...flags, help: { ...flag.boolean('print these flags and exit'), short: 'h' } };
  const options = Object.fromEntries(
    Object.entries(all).map(([name, spec]) => [
      name,
      { type: spec.type, ...(spec.short ? { short: spec.short } : {}) },
    ]),
  );
  const usageError = (error) => {
    process.stderr.write(`${error.message}\nusage: ${usage} (--help lists the flags)\n`);
    process.exit(2);
  };
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (error) {
    usageError(error);
  }
  if (values.help) {
    process.stdout.write(helpText(usage, all));
    process.exit(0);
  }
  const settings = {};
  const given = new Set();
  try {
    for (const [name, spec] of Object.entries(flags)) {
      const key = camelCase(name);
      const text = values[name];
      if (text !== undefined) given.add(key);
      if (spec.type === 'boolean') settings[key] = text === true;
      else settings[key] = text === undefined ? spec.default : spec.parse ? spec.parse(text, name) : text;
    }
  } catch (error) {
    usageError(error);
  }
  if (settings.quick && quick) {
    for (const [key, value] of Object.entries(quick)) if (!given.has(key)) settings[key] = value;
  }
  return { settings, given };
}

/** Whether the module at `importMetaUrl` is the program node was started with (not imported by another). */
export function isEntry(importMetaUrl) {
  if (process.argv[1] === undefined) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(importMetaUrl));
  } catch {
    return false;
  }
}

/** Runs a benchmark's main(): an error prints `bench:<name>: message` and exits 1. */
export function runMain(name, main) {
  main().catch((error) => {
    process.stderr.write(`bench:${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

/** VmRSS, VmHWM, RssAnon and RssFile of this process in kB (Linux); elsewhere the rss and maxRSS Node reports. */
export function ownMemory() {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM'), anonKb: field('RssAnon'), fileKb: field('RssFile') };
  } catch {
    return { rssKb: Math.round(process.memoryUsage().rss / 1024), hwmKb: process.resourceUsage().maxRSS };
  }
}

/** Collects a child process's stdout and stderr as text. */
export function collectOutput(proc) {
  const output = { stdout: '', stderr: '' };
  proc.stdout.setEncoding('utf8').on('data', (d) => {
    output.stdout += d;
  });
  proc.stderr.setEncoding('utf8').on('data', (d) => {
    output.stderr += d;
  });
  return output;
}

/** A command-line integer of at least `min`; throws naming the `--flag` otherwise. */
export function integerArg(value, name, min) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} needs an integer >= ${min}, got "${value}"`);
  return n;
}

// --- child processes --------------------------------------------------------------------------------------------

const RESULT_PREFIX = '@@result ';

/** In a child: prints the result line its parent reads with childResult(). */
export function printChildResult(result) {
  process.stdout.write(`\n${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

/** The result a child printed with printChildResult(), or undefined. */
export function childResult(stdout) {
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
  return line === undefined ? undefined : JSON.parse(line.slice(RESULT_PREFIX.length));
}

/**
 * Runs `script --child <task as JSON>` in a fresh Node process (with `nodeArgs` before the script, `env` added to
 * the environment) and returns its childResult(); throws with the end of its stderr when it fails or prints none.
 */
export async function runNodeChild(script, task, { nodeArgs = [], env = {}, what = `the ${task.kind} child` } = {}) {
  const proc = spawn(process.execPath, [...nodeArgs, script, '--child', JSON.stringify(task)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = collectOutput(proc);
  const code = await new Promise((done, fail) => {
    proc.on('error', fail);
    proc.on('close', done);
  });
  const result = code === 0 ? childResult(output.stdout) : undefined;
  if (result === undefined) throw new Error(`${what} failed (exit ${code}):\n${output.stderr.slice(-3000)}`);
  return result;
}

/** Whether GNU time (/usr/bin/time -f) is there to report a process's peak RSS and CPU time. */
export function hasGnuTime() {
  const probe = spawnSync('/usr/bin/time', ['-f', '%M', 'true'], { encoding: 'utf8' });
  return probe.status === 0 && /^\d+\s*$/.test(probe.stderr.trim().split('\n').pop() ?? '');
}

/**
 * Runs one process to its end: wall time from spawn to exit and its peak RSS. With GNU time the peak is the
 * kernel's ru_maxrss of the measured process (time itself is a separate, tiny process), and `cpuMs` its user +
 * system CPU time (null without GNU time; then VmHWM is polled every 5 ms). `input`, when given, is written to the
 * process's stdin (GNU time passes its stdin on). `scratch`: a folder for GNU time's output.
 */
export function measureProcess(command, args, { gnuTime, scratch, input }) {
  return new Promise((resolvePromise, reject) => {
    const rssFile = join(scratch, `rss-${process.hrtime.bigint()}`);
    const [file, argv] = gnuTime
      ? ['/usr/bin/time', ['-f', '%M %U %S', '-o', rssFile, command, ...args]]
      : [command, args];
    const started = performance.now();
    const proc = spawn(file, argv, { cwd: root, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const output = collectOutput(proc);
    if (input !== undefined) proc.stdin.end(input);
    let polledKb = 0;
    const poll = gnuTime
      ? undefined
      : setInterval(() => {
          try {
            const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
            polledKb = Math.max(polledKb, Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0));
          } catch {
            // The process has just exited.
          }
        }, 5);
    proc.on('error', reject);
    proc.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (poll) clearInterval(poll);
      if (code !== 0) {
        reject(new Error(`${command} exited with ${code}:\n${output.stderr.slice(-3000)}`));
        return;
      }
      const [maxRss, user, system] = gnuTime
        ? readFileSync(rssFile, 'utf8').trim().split('\n').pop().split(' ').map(Number)
        : [polledKb, Number.NaN, Number.NaN];
      rmSync(rssFile, { force: true });
      const cpuMs = gnuTime ? (user + system) * 1000 : null;
      resolvePromise({ wallMs, peakRssKb: maxRss, cpuMs, stdout: output.stdout, stderr: output.stderr });
    });
  });
}

// --- statistics ---------------------------------------------------------------------------------------------------

/** Median of the finite values; NaN when there are none. */
export const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** [smallest, largest]. */
export const spread = (values) => [Math.min(...values), Math.max(...values)];

/** `items` rotated left by `by`: the order of the sides in repeat `by`. */
export const rotate = (items, by) => items.map((_, i) => items[(i + by) % items.length]);

// Memory drift: RSS after the last call may differ from RSS after this call by at most the tolerance.
export const SETTLED_AFTER_CALL = 5;
const RSS_TOLERANCE_KB = 10 * 1024;
const RSS_TOLERANCE_FRACTION = 0.05;

/**
 * RSS drift over `calls` (each with `rssKb`, at least SETTLED_AFTER_CALL of them): RSS after the last call against
 * RSS after call SETTLED_AFTER_CALL, within max(10 MB, 5%) or not.
 */
export function rssDrift(calls) {
  const settled = calls[SETTLED_AFTER_CALL - 1].rssKb;
  const last = calls[calls.length - 1].rssKb;
  const toleranceKb = Math.max(RSS_TOLERANCE_KB, settled * RSS_TOLERANCE_FRACTION);
  return {
    settledCall: SETTLED_AFTER_CALL,
    settledRssKb: settled,
    lastRssKb: last,
    growthKb: last - settled,
    toleranceKb,
    within: Math.abs(last - settled) <= toleranceKb,
  };
}

/** The 1, 5 and 15 minute load averages as text. */
export const loadAverageText = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** dist/ is what benchmarks import: rebuild it when it is missing or older than src/. */
export function ensureDist() {
  if (existsSync(distEntry) && statSync(distEntry).mtimeMs >= newestMtime(join(root, 'src'))) return;
  process.stderr.write('dist/ is missing or older than src/: tsc -p tsconfig.build.json\n');
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('tsc failed; fix the build first');
}

/** Makes the test fixtures (`npm run fixtures`) unless every path of `needed` is there; `what` names them. */
export function ensureFixtures(needed, what) {
  const missing = needed.filter((path) => !existsSync(path));
  if (missing.length === 0) return;
  process.stderr.write(
    `${what} missing (${missing.map((path) => path.slice(root.length + 1)).join(', ')}): npm run fixtures\n`,
  );
  const result = spawnSync(process.execPath, [join(root, 'scripts', 'make-fixtures.mjs')], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) throw new Error('npm run fixtures failed');
}

/** The paths `npm run models:test` recorded (test/fixtures/real/models.json) for `names`; throws naming the missing. */
export function realModels(names) {
  const file = join(root, 'test', 'fixtures', 'real', 'models.json');
  const models = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const missing = names.filter((n) => !models[n] || !existsSync(models[n]));
  if (missing.length > 0)
    throw new Error(`real models missing (${missing.join(', ')}, ${file}): run npm run models:test`);
  return models;
}

/** The peers' Python: `given`, or the last line `bash scripts/peers-setup.sh` prints (which sets them up). */
export function peersPython(given) {
  if (given) return given;
  const result = spawnSync('bash', [join(root, 'scripts', 'peers-setup.sh')], { cwd: root, encoding: 'utf8' });
  const python = result.stdout?.trim().split('\n').pop();
  if (result.status !== 0 || !python) {
    throw new Error(`bash scripts/peers-setup.sh failed:\n${(result.stderr ?? '').slice(-2000)}`);
  }
  return python;
}

/** The commit checked out, or null. */
export function gitCommit() {
  return spawnSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout?.trim() || null;
}

/** Where speech starts in a clean clip (seconds): the first 10 ms frame within 20 dB of the loudest one. */
export async function speechOnset(file) {
  const { decodeAudio } = await import(distEntry);
  const { samples } = await decodeAudio(file);
  const frame = 160;
  const levels = [];
  for (let i = 0; i + frame <= samples.length; i += frame) {
    let energy = 0;
    for (let j = 0; j < frame; j++) energy += samples[i + j] ** 2;
    levels.push(Math.sqrt(energy / frame));
  }
  const threshold = Math.max(...levels) / 10;
  return (
    Math.max(
      0,
      levels.findIndex((level) => level > threshold),
    ) *
    (frame / 16_000)
  );
}

/**
 * `f16Path` quantized to `variant` (q8_0, q5_1, ...) by whisper.cpp's whisper-quantize (`quantize`, built with
 * whisper-cli: bench/build-whisper-cli.mjs), made once beside it in ggml-quantized/: a file named for the source's size
 * and mtime, so a new source is quantized again, written under a temporary name and renamed into place.
 */
export function quantizedCopy(f16Path, variant, quantize) {
  const source = statSync(f16Path);
  const dir = join(dirname(dirname(f16Path)), 'ggml-quantized');
  const target = join(dir, `${basename(f16Path, '.bin')}-${variant}-${source.size}-${Math.round(source.mtimeMs)}.bin`);
  if (!existsSync(target)) {
    mkdirSync(dir, { recursive: true });
    const partial = `${target}.partial`;
    const run = spawnSync(quantize, [f16Path, partial, variant], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`${quantize} ${variant} failed:\n${(run.stderr ?? '').slice(-2000)}`);
    renameSync(partial, target);
  }
  return target;
}

/** Writes `document` as bench/out/<name>-<timestamp>.json and returns that path. */
export function writeResults(name, document) {
  const outDir = join(root, 'bench', 'out');
  mkdirSync(outDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outFile = join(outDir, `${name}-${stamp}.json`);
  writeFileSync(outFile, `${JSON.stringify(document, null, 2)}\n`);
  return outFile;
}

/** The machine a benchmark ran on, as every result file records it. */
export function machineFacts() {
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
}

/** Words of a transcript for comparing engines: lower case, letters, digits and apostrophes. */
export const transcriptWords = (text) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);

/** Word-level edit distance (substitutions, insertions, deletions). */
export function wordEdits(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

/** The reference transcripts of the shared audio, ../shared/audio/transcripts.tsv (file name -> text). */
export function readReferences() {
  const lines = readFileSync(sharedAudio('transcripts.tsv'), 'utf8').split('\n').slice(1);
  return new Map(lines.filter(Boolean).map((line) => line.split('\t', 2)));
}

/** Word error rate of `text` against `reference` (transcriptWords on both; 0 for an empty reference). */
export function referenceWer(text, reference) {
  const ref = transcriptWords(reference);
  return ref.length === 0 ? 0 : wordEdits(transcriptWords(text), ref) / ref.length;
}

/** `samples` repeated (the last copy cut short) to fill `length` samples: a long file made of one recording. */
export function repeatToLength(samples, length) {
  const out = new Float32Array(length);
  for (let at = 0; at < length; at += samples.length)
    out.set(samples.subarray(0, Math.min(samples.length, length - at)), at);
  return out;
}

/** Floats in [-1, 1] as 16-bit little-endian PCM bytes (clamped, rounded), what a streaming client sends. */
export function toPcm16(samples) {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round((samples[i] ?? 0) * 32768))), 2 * i);
  }
  return out;
}

/**
 * The real Whisper models the speed benches compare (`npm run models:test`): each ggml file's name in
 * test/fixtures/real/models.json, the CTranslate2 directory it was converted from, and its DTW preset.
 */
export const REAL_WHISPER_MODELS = {
  'tiny.en': { ggml: 'whisper-tiny.en', ct2: 'ct2-whisper-tiny.en', dtw: 'tiny.en' },
  base: { ggml: 'whisper-base', ct2: 'ct2-whisper-base', dtw: 'base' },
};
