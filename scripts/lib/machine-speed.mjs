// How much slower this machine runs than the one the test suite's time limits were set on, so that a limit that
// depends on the CPU (a stall timeout, a latency bound, a test timeout, a step under qemu) can grow with it instead of
// failing on a slower machine. The project's machines differ up to 3x in speed (a 2-core AMD EPYC against a 2.5 GHz
// Intel Xeon), and a loaded machine is a slower one.
//
// The measure is a short fixed workload of the kinds of work the tests do on the CPU (float arithmetic over typed
// arrays, object and string churn, a sort), timed several times in this process; the slowdown is its median time over
// REFERENCE_MS, never below 1 (a faster machine keeps the limits as written). CI measures it once at its start and
// exports VOXMILL_SLOWDOWN, which every later process reads instead of measuring again.
//
//   node scripts/lib/machine-speed.mjs     prints the measurement and `VOXMILL_SLOWDOWN=<factor>` as its last line
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

/**
 * The workload's median time on the reference machine: the 2-vCPU AMD EPYC VM the limits were set on, otherwise idle
 * (2026-11-28, Node 20.20.2; six runs of the script gave 100-107 ms; with two busy loops beside it, 178-181 ms).
 */
export const REFERENCE_MS = 104;
const ROUNDS = 7;

/** One round of the workload; returns a checksum so that no part of it can be optimized away. */
function workload() {
  let checksum = 0;
  // Float arithmetic over a typed array, like the resampler, the front ends and the WER's tables.
  const signal = new Float32Array(1 << 14);
  for (let pass = 0; pass < 180; pass++) {
    for (let i = 0; i < signal.length; i++) {
      signal[i] = Math.sin(i * 0.001 * (pass + 1)) * 0.5 + (signal[(i * 7) & (signal.length - 1)] ?? 0) * 0.25;
    }
    let energy = 0;
    for (let i = 0; i < signal.length; i++) energy += signal[i] * signal[i];
    checksum += energy;
  }
  // Objects, strings and JSON, like request handling and test bookkeeping.
  const rows = [];
  for (let i = 0; i < 60_000; i++) rows.push({ id: i, word: `w${(i * 2654435761) % 1000}`, start: i / 10 });
  checksum += JSON.parse(JSON.stringify(rows)).length;
  checksum += rows
    .map((row) => row.word)
    .sort()
    .join(' ')
    .replace(/w(\d)/g, '$1').length;
  return checksum;
}

/** The median time of the workload in ms, after one untimed round. */
export function measureWorkloadMs(rounds = ROUNDS) {
  workload();
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    workload();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** The slowdown against the reference machine (at least 1), two decimals. */
export function measureSlowdown() {
  return Math.max(1, Math.round((measureWorkloadMs() / REFERENCE_MS) * 100) / 100);
}

/**
 * VOXMILL_SLOWDOWN when it is set (CI measures once at its start), else measured now and put into this process's
 * environment, so the processes it starts inherit it.
 */
export function slowdown() {
  const set = Number(process.env.VOXMILL_SLOWDOWN);
  if (Number.isFinite(set) && set >= 1) return set;
  const measured = measureSlowdown();
  process.env.VOXMILL_SLOWDOWN = String(measured);
  return measured;
}

/** A time limit set on the reference machine, grown by this machine's slowdown. */
export function scaledMs(ms) {
  return Math.round(ms * slowdown());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ms = measureWorkloadMs();
  const factor = Math.max(1, Math.round((ms / REFERENCE_MS) * 100) / 100);
  console.log(
    `machine speed: the workload took ${ms.toFixed(1)} ms (reference ${REFERENCE_MS} ms): slowdown ${factor}`,
  );
  console.log(`VOXMILL_SLOWDOWN=${factor}`);
}
