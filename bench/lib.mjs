// Helpers every benchmark uses: the repository root, this process's memory, a child's output, medians, and a
// dist/ that is not older than src/.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const distEntry = join(root, 'dist', 'index.js');

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

/** Median of the finite values; NaN when there are none. */
export const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

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
