#!/usr/bin/env node
// The 512 MB edge profile: `voxmill serve` with tiny.en quantized to q5_1, one Piper voice and the VAD, under a
// memory limit, against the same server with the library's defaults for the same models, measured in one run.
//
//   npm run bench:edge [-- options]     (the flags: `node bench/edge.mjs --help`)
//
// Method:
// 1. Profiles (each a config file for `voxmill serve`; the edge one is README.md's "512 MB edge profile", with the
//    voice measured here, as a file path):
//    - edge:    tiny.en q5_1 (whisper.cpp's whisper-quantize on the real tiny.en, bench/build-whisper-cli.mjs),
//               the Silero VAD, the real voice en_US-joe-medium, no DTW alignment and no previous text in
//               the prompt, cpuThreads 2, one synthesis worker with ONNX Runtime's memory arena off and its
//               voice session released as soon as it is idle, one transcription at a time, one run of any kind
//               at a time (maxConcurrentRuns 1), maxDecodedBytes 64 MiB, uploads up to 25 MB (--edge-override
//               changes it);
//    - default: tiny.en f16 and the same voice and VAD, every other setting the library's default.
// 2. Each profile's server runs in its own memory cgroup (v1 memory.limit_in_bytes, or v2 memory.max) limited to
//    --limit-mb (512) for the edge profile and unlimited for the default one, entered before Node starts, so every
//    page the server touches is charged. Without a writable cgroup tree the run still measures, and says the limit
//    was not enforced.
// 3. Load: --clients (4) clients at once, each making --rounds rounds of one transcription (a file from the shared
//    audio, in turn gb0.wav 127 s, jfk.wav, 2830-3980-0043.wav) then one speech request (a 3-sentence paragraph as
//    WAV), back to back. Every response must be 200 with a body.
// 4. Peak RSS: the server process's VmHWM (read from /proc while it runs and at the end), the peaks of its anonymous
//    and file-backed parts (RssAnon, RssFile: sampled every 20 ms), and the cgroup's own peak
//    (memory.max_usage_in_bytes / memory.peak: RSS plus page cache), its OOM-kill count, and whether the server is
//    still alive after the load. The ratio printed is the edge peak over the default peak.
// Raw results go to bench/out/edge-<timestamp>.json. The run says whether the edge peak RSS is under --target-mb
// (400); the exit status is 1 when a request failed or a server died or was OOM-killed, never for a missed target.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  quantizedCopy,
  realModels,
  root,
  runMain,
  sharedAudio,
  sharedDir,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs(
  'npm run bench:edge [-- options]',
  {
    clients: flag.integer('concurrent clients', 4),
    rounds: flag.integer('rounds per client (one transcription and one speech request each)', 3),
    'limit-mb': flag.integer("the edge server's memory limit, MB", 512, { min: 64 }),
    'target-mb': flag.integer('the peak RSS the edge profile must stay under, MB', 400),
    profiles: flag.list('the profiles to measure', { default: true, edge: true }),
    'edge-override': flag.json(
      'settings merged over the edge profile (its top-level keys replaced), to try others',
      {},
    ),
    quick: flag.boolean('1 round per client'),
  },
  { quick: { rounds: 1 } },
);

const PARAGRAPH =
  'The station reported light rain through the morning. Winds stay calm along the coast, and the evening turns ' +
  'clear and cool. Tomorrow brings sunshine and a high near twenty degrees.';
const AUDIO = ['gb0.wav', 'jfk.wav', '2830-3980-0043.wav'];

/** The memory cgroup a profile's server runs in: v1 or v2, whichever this machine mounts writable; else none. */
function createCgroup(name, limitMb) {
  const v1 = '/sys/fs/cgroup/memory';
  const v2 = '/sys/fs/cgroup';
  const candidates = [
    existsSync(join(v1, 'memory.limit_in_bytes')) && {
      dir: join(v1, name),
      limit: 'memory.limit_in_bytes',
      peak: 'memory.max_usage_in_bytes',
      events: null,
    },
    existsSync(join(v2, 'cgroup.controllers')) && {
      dir: join(v2, name),
      limit: 'memory.max',
      peak: 'memory.peak',
      events: 'memory.events',
    },
  ].filter(Boolean);
  for (const group of candidates) {
    try {
      mkdirSync(group.dir);
      // A v2 group without the memory controller enabled for it has no memory files: not usable.
      if (!existsSync(join(group.dir, group.limit))) throw new Error('no memory controller');
      if (limitMb !== null) writeFileSync(join(group.dir, group.limit), String(limitMb * 1024 * 1024));
      return group;
    } catch {
      try {
        rmdirSync(group.dir);
      } catch {
        // Never made.
      }
    }
  }
  return null;
}

/** The cgroup's peak bytes and OOM kills (v1: memory.oom_control's oom_kill; v2: memory.events' oom_kill). */
function cgroupFacts(group) {
  const read = (file) => readFileSync(join(group.dir, file), 'utf8');
  const peakBytes = existsSync(join(group.dir, group.peak)) ? Number(read(group.peak).trim()) : null;
  const countersFile = group.events ?? 'memory.oom_control';
  const counters = existsSync(join(group.dir, countersFile)) ? read(countersFile) : '';
  const oomKills = Number(/oom_kill (\d+)/u.exec(counters)?.[1] ?? 0);
  return { peakMb: peakBytes === null ? null : peakBytes / 1024 / 1024, oomKills };
}

async function removeCgroup(group) {
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(group.dir);
      return;
    } catch {
      // Still has a process for a moment after it exits.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  console.warn(`bench:edge: could not remove the cgroup ${group.dir}; rmdir it by hand`);
}

/** How long a server may take to load its models and listen. */
const START_TIMEOUT_MS = 120_000;

/** Starts `voxmill serve` in `group` (when there is one); resolves with the process, its URL and a VmHWM poller. */
function startServer(configPath, group) {
  const cli = join(root, 'dist', 'cli', 'main.js');
  const command = group
    ? ['sh', ['-c', `echo $$ > ${join(group.dir, 'cgroup.procs')} && exec "$0" "$@"`, process.execPath]]
    : [process.execPath, []];
  const args = [
    ...command[1],
    cli,
    'serve',
    '--no-auth',
    '--quiet',
    '--no-demo',
    '--preload',
    '--lazy',
    '-c',
    configPath,
  ];
  const proc = spawn(command[0], [...args, '--port', '0'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let peakKb = 0;
  // VmHWM is the kernel's own peak; the anonymous (heap, buffers) and file-backed (the binary, shared libraries,
  // mapped model files) parts are sampled, so their peaks are at least as high as polled.
  const parts = { anonKb: 0, fileKb: 0 };
  const field = (status, name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'mu').exec(status)?.[1] ?? 0);
  const poll = () => {
    try {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      peakKb = Math.max(peakKb, field(status, 'VmHWM'));
      parts.anonKb = Math.max(parts.anonKb, field(status, 'RssAnon'));
      parts.fileKb = Math.max(parts.fileKb, field(status, 'RssFile'));
    } catch {
      // Exited.
    }
  };
  const poller = setInterval(poll, 20);
  let stderr = '';
  proc.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (error) => {
      clearInterval(poller);
      clearTimeout(timer);
      proc.kill('SIGKILL');
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`voxmill serve did not listen within ${START_TIMEOUT_MS} ms:\n${stderr.slice(-2000)}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (!line) return;
      proc.stdout.off('data', onData);
      proc.stdout.resume();
      clearTimeout(timer);
      proc.off('exit', onEarlyExit);
      resolve({
        proc,
        url: JSON.parse(line).url,
        peakRssMb: () => {
          poll();
          return peakKb / 1024;
        },
        peakPartsMb: () => ({ anon: parts.anonKb / 1024, file: parts.fileKb / 1024 }),
        rssMb: () => {
          try {
            return field(readFileSync(`/proc/${proc.pid}/status`, 'utf8'), 'VmRSS') / 1024;
          } catch {
            return Number.NaN;
          }
        },
        stop: () => {
          clearInterval(poller);
          return new Promise((done) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return done();
            proc.once('exit', () => done());
            proc.kill('SIGTERM');
          });
        },
        stderr: () => stderr,
      });
    };
    proc.stdout.on('data', onData);
    const onEarlyExit = (code, signal) =>
      fail(new Error(`voxmill serve exited (${code ?? signal}) before listening:\n${stderr.slice(-2000)}`));
    proc.once('exit', onEarlyExit);
  });
}

/** One client: `rounds` times a transcription then a speech request. Returns its failures and request times. */
async function client(url, index, rounds) {
  const failures = [];
  const times = { transcription: [], speech: [] };
  for (let round = 0; round < rounds; round++) {
    try {
      await oneRound(url, index, round, failures, times);
    } catch (error) {
      failures.push(`round ${round}: ${error.message} (${error.cause?.message ?? 'no cause'})`);
    }
  }
  return { failures, times };
}

async function oneRound(url, index, round, failures, times) {
  {
    const file = AUDIO[(index + round) % AUDIO.length];
    const form = new FormData();
    form.set('model', 'svc-stt-1');
    form.set('file', new Blob([readFileSync(sharedAudio(file))]), file);
    let started = performance.now();
    const heard = await fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form });
    const text = await heard.text();
    times.transcription.push(performance.now() - started);
    if (heard.status !== 200 || !text.trim())
      failures.push(`transcription of ${file}: ${heard.status} ${text.slice(0, 200)}`);
    started = performance.now();
    const spoken = await fetch(`${url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-tts-1', voice: 'en_US-joe', input: PARAGRAPH, response_format: 'wav' }),
    });
    const audio = Buffer.from(await spoken.arrayBuffer());
    times.speech.push(performance.now() - started);
    if (spoken.status !== 200 || audio.length < 44 + 32_000) {
      failures.push(`speech: ${spoken.status} ${audio.length} bytes ${audio.subarray(0, 200).toString('utf8')}`);
    }
  }
}

async function measure(name, config, limitMb, scratch) {
  const configPath = join(scratch, `${name}.json`);
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const group = createCgroup(`voxmill-bench-edge-${process.pid}-${name}`, limitMb);
  const started = performance.now();
  let server;
  try {
    server = await startServer(configPath, group);
    const idleRssMb = server.rssMb();
    const clients = await Promise.all(
      Array.from({ length: settings.clients }, (_, i) => client(server.url, i, settings.rounds)),
    );
    const alive = server.proc.exitCode === null && server.proc.signalCode === null;
    const peakRssMb = server.peakRssMb();
    const { anon: peakAnonMb, file: peakFileMb } = server.peakPartsMb();
    const facts = group ? cgroupFacts(group) : { peakMb: null, oomKills: null };
    await server.stop();
    const failures = clients.flatMap((c) => c.failures);
    const all = (kind) => clients.flatMap((c) => c.times[kind]).sort((a, b) => a - b);
    return {
      name,
      limitMb: group ? limitMb : null,
      limitEnforced: group !== null && limitMb !== null,
      cgroup: group ? group.limit : null,
      idleRssMb,
      peakRssMb,
      peakAnonMb,
      peakFileMb,
      cgroupPeakMb: facts.peakMb,
      oomKills: facts.oomKills,
      alive,
      requests: settings.clients * settings.rounds * 2,
      failures,
      p50TranscriptionMs: all('transcription')[Math.floor(all('transcription').length / 2)],
      p50SpeechMs: all('speech')[Math.floor(all('speech').length / 2)],
      wallSeconds: (performance.now() - started) / 1000,
      stderrTail: failures.length > 0 || !alive ? server.stderr().slice(-2000) : undefined,
    };
  } finally {
    await server?.stop();
    if (group) await removeCgroup(group);
  }
}

async function main() {
  ensureDist();
  const models = realModels(['whisper-tiny.en', 'piper-joe-medium']);
  const { ensureWhisperCli, quantizeBeside } = await import('./build-whisper-cli.mjs');
  const q5 = quantizedCopy(models['whisper-tiny.en'], 'q5_1', quantizeBeside(ensureWhisperCli()));
  const vadModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
  const voiceDirs = [dirname(models['piper-joe-medium'])];
  const scratch = await mkdtemp(join(tmpdir(), 'voxmill-edge-'));
  const modelsDir = join(scratch, 'models');
  const edge = {
    modelsDir,
    // No DTW alignment (word times from the decoder's timestamps) and no previous text in the prompt: measured, DTW
    // took 80-130 MB per transcription and a long prompt 60-160 MB (its logits, and the dequantized token embedding
    // OpenBLAS multiplies them with) - BENCHMARKS.md, "Edge".
    models: {
      'svc-stt-1': { model: q5, dtw: false, conditionOnPreviousText: false, concurrency: 1, maxQueue: 16 },
    },
    vadModel,
    voiceDirs,
    cpuThreads: 2,
    // One run at a time: a transcription and a synthesis each hold their working memory while they compute, and
    // the voice's session (about 130 MB for a medium voice) is let go between requests, at the price of loading it
    // again for each (BENCHMARKS.md, "The 512 MB edge profile").
    maxConcurrentRuns: 1,
    maxDecodedBytes: 64 * 1024 * 1024,
    tts: { workers: 1, memoryArena: false, sessionIdleMs: 1 },
    http: { limits: { maxFileBytes: 25 * 1024 * 1024 } },
    ...settings.edgeOverride,
  };
  const defaults = { modelsDir, models: { 'svc-stt-1': models['whisper-tiny.en'] }, vadModel, voiceDirs };
  const configs = { default: [defaults, null], edge: [edge, settings.limitMb] };
  const profiles = [];
  for (const name of settings.profiles) profiles.push(await measure(name, ...configs[name], scratch));
  const byName = Object.fromEntries(profiles.map((p) => [p.name, p]));
  const rows = profiles.map((p) => [
    p.name,
    p.limitEnforced ? `${p.limitMb} MB (${p.cgroup})` : 'none',
    p.idleRssMb.toFixed(0),
    p.peakRssMb.toFixed(0),
    `${p.peakAnonMb.toFixed(0)} / ${p.peakFileMb.toFixed(0)}`,
    p.cgroupPeakMb === null ? '-' : p.cgroupPeakMb.toFixed(0),
    String(p.oomKills ?? '-'),
    `${p.requests - p.failures.length}/${p.requests}`,
    p.alive ? 'yes' : 'NO',
    (p.p50TranscriptionMs / 1000).toFixed(2),
    (p.p50SpeechMs / 1000).toFixed(2),
  ]);
  const header = [
    'profile',
    'limit',
    'idle MB',
    'peak RSS MB',
    'anon / file MB',
    'cgroup peak MB',
    'OOM kills',
    'ok',
    'alive',
    'p50 stt s',
    'p50 tts s',
  ];
  console.log(`${settings.clients} clients x ${settings.rounds} rounds (transcription + speech each)`);
  console.log(`| ${header.join(' | ')} |\n|${header.map(() => ' --- ').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  if (byName.edge && byName.default) {
    console.log(`edge peak RSS / default peak RSS: ${(byName.edge.peakRssMb / byName.default.peakRssMb).toFixed(2)}`);
  }
  const out = writeResults('edge', { settings, commit: gitCommit(), machine: machineFacts(), profiles });
  console.log(`raw results: ${out}`);
  if (byName.edge) {
    const under = byName.edge.peakRssMb < settings.targetMb;
    console.log(
      `edge peak RSS ${byName.edge.peakRssMb.toFixed(0)} MB: ${under ? 'under' : 'NOT under'} the ${settings.targetMb} MB target`,
    );
  }
  const problems = [
    ...profiles.flatMap((p) => p.failures.map((f) => `${p.name}: ${f}`)),
    ...profiles.filter((p) => !p.alive).map((p) => `${p.name}: the server died\n${p.stderrTail ?? ''}`),
    ...profiles.filter((p) => p.oomKills > 0).map((p) => `${p.name}: ${p.oomKills} OOM kill(s)`),
  ];
  if (problems.length > 0) throw new Error(problems.join('\n'));
}

runMain('edge', main);
