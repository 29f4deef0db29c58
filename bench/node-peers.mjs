#!/usr/bin/env node
// voxmill against the other Node.js whisper.cpp bindings on npm, side by side on this machine: the same ggml file
// (real tiny.en, `npm run models:test`), the same audio (jfk.wav 11 s, gb0.wav 127 s; 16 kHz mono 16-bit WAV), warm
// calls.
//
//   npm run bench:node-peers [-- options]     (the flags: FLAGS below, or `node bench/node-peers.mjs --help`)
//
// Method. One fresh Node process per engine per repeat (--repeats), engines in an order that rotates per repeat, one
// at a time. Each process imports its package, loads the model (timed: "load"), transcribes the first file once (the
// warm-up, untimed), then times 2 calls per file, file path in, text out (the binding's file reading and WAV decoding
// are part of the call), and reports the median of the two. Around each timed call perf_hooks'
// monitorEventLoopDelay (5 ms resolution) records how long the event loop could not run: "loop block" is the
// longest interval between its timer ticks less the resolution, the longest over the timed calls; an asynchronous
// binding shows about 0, a synchronous one its whole call. Peak RSS: the process's VmHWM (/proc/self/status) after
// the last call; for the engines that spawn a whisper binary per call, plus the largest VmHWM of a process they
// spawned (the parent polls the child's process tree every 20 ms), since both are resident at once. The ratio is
// peer / voxmill per repeat and file (above 1: voxmill faster), the median over the repeats. Each engine's text is
// scored against ../shared/audio/transcripts.tsv (word error rate, bench/lib.mjs transcriptWords), the decoding check.
//
// Decoding: greedy (best-of 5 at the fallback temperatures, whisper.cpp's greedy default), language en, no word
// timestamps or DTW anywhere (voxmill: dtw off; its segment timestamps are whisper's own timestamp tokens, which
// every side decodes), no VAD, 1 thread where the API takes a thread count (--threads), flash attention on where it
// is a choice (voxmill's and whisper.cpp 1.9's default). Not settable in the two spawning engines: they run their
// binary's defaults, beam search of width 5 (whisper-cli's and main's default -bs 5) on min(4, cores) threads; the
// table's threads and decoding columns say so. (Their language option goes unquoted into the command line, so extra
// flags could ride on it; not done here: that is not their API.)
//
// The engines and their setup, all in $VOXMILL_PEERS_DIR/node-whisper (default ~/.cache/voxmill/peers/node-whisper),
// never a dependency of voxmill. setupPeers() below installs the pinned versions once with
//   npm install --prefix <dir> --ignore-scripts --save-exact <pins>
// and builds what needs building (idempotent: later runs only check versions and the built files):
// - voxmill (this checkout's dist/): createSpeech({ models: { bench: { model, beamSize: 1, threads, dtw: false } },
//   vadModel: null, vad: false, cpuThreads: threads }), speech.loadModel, speech.transcribe(path, { language: 'en' }).
//   Its addon (whisper.cpp 1.9.1, whisper-cpp-src) as built here: for this CPU with OpenBLAS by default (a source
//   build's VOXMILL_CPU=native, VOXMILL_BLAS=auto), or as VOXMILL_CPU/VOXMILL_BLAS chose; the run records which
//   (build/CMakeCache.txt).
// - @fugood/whisper.node: prebuilt @fugood/node-whisper-linux-x64 (its postinstall builds only when
//   npm_config_build_from_source is set). That binary is built for the x86-64 baseline: no AVX instruction in it
//   (objdump), OpenMP. initWhisper({ filePath, useGpu: false, useFlashAttn: true }) (its flash attention default is
//   off), ctx.transcribeFile(path, { language: 'en', maxThreads }) on a worker thread.
// - smart-whisper: its install script is `node-gyp rebuild` of its vendored whisper.cpp (a mid-2024 tree, no version
//   file shipped), and node-gyp downloads Node's headers from nodejs.org first; so npm installs it with
//   --ignore-scripts and setup runs `npm rebuild smart-whisper --nodedir=<this Node's prefix>` (the headers this
//   Node ships in include/node). Built with node-gyp's flags (-O3, no -march: ggml without AVX); where ldconfig
//   lists libopenblas it links it and defines GGML_USE_OPENBLAS, which its ggml no longer reads (no BLAS). Flash
//   attention off (not exposed; its tree's default). It takes PCM, not a file: the call reads the WAV with a small
//   reader here. new Whisper(path, { gpu: false }), whisper.transcribe(pcm, { strategy: greedy, best_of: 5,
//   language: 'en', n_threads }) (its own default is beam search).
// - @napi-rs/whisper: prebuilt @napi-rs/whisper-linux-x64-gnu; synchronous: new Whisper(path, { useGpu: false,
//   flashAttn: true }), decodeAudio(bytes) then whisper.full(params, samples) block the event loop.
// - nodejs-whisper: spawns whisper-cli through a shell per call, from its own vendored whisper.cpp 1.9.1 (the tree
//   voxmill builds from); no option for another binary or for threads (whisper-cli's default: min(4, cores)). Its
//   first call builds that binary (`cmake -B build`, `cmake --build build --config Release`: GGML_NATIVE on, no BLAS,
//   OpenMP where the compiler has it); setup runs those same commands beforehand, with -j.
//   nodewhisper(path, { modelName: 'tiny.en', modelRootPath, whisperOptions: { language: 'en' } }).
// - whisper-node: spawns `./main` of its vendored whisper.cpp 1.5.0 through a shell per call (shelljs exec with a
//   callback, so asynchronous); no option for another binary or for threads (main's default: min(4, cores)).
//   Importing it runs `make` in that tree when ./main is missing; setup runs that `make` beforehand, with -j (its
//   Makefile: -mavx -mavx2 -mfma -mf16c, no BLAS; no flash attention in 1.5). whisper(path, { modelPath,
//   whisperOptions: { language: 'en' } }). Its parser (tsToArray) drops the first segment of whisper's output, so its
//   text, and its WER, miss that segment.
// For the two spawning engines "load" does not apply: every call starts a process that loads the model again.
// A peer that cannot be installed or built is reported as "could not install: <reason>" and left out.
//
// Results: bench/out/node-peers-<timestamp>.json. --quick: 1 repeat, jfk only.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, homedir, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  benchArgs,
  childResult,
  collectOutput,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  isEntry,
  loadAverageText,
  machineFacts,
  median,
  printChildResult,
  readReferences,
  realModels,
  referenceWer,
  root,
  rotate,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const self = fileURLToPath(import.meta.url);
const peersDir = join(process.env.VOXMILL_PEERS_DIR ?? join(homedir(), '.cache', 'voxmill', 'peers'), 'node-whisper');
const peerRequire = createRequire(join(peersDir, 'package.json'));
const packageDir = (name) => join(peersDir, 'node_modules', ...name.split('/'));

const PINS = {
  '@fugood/whisper.node': '1.1.3',
  'smart-whisper': '0.8.1',
  '@napi-rs/whisper': '0.0.4',
  'nodejs-whisper': '0.3.1',
  'whisper-node': '1.1.1',
};
const AUDIO = { jfk: 'jfk.wav', gb0: 'gb0.wav' };
const LOOP_RESOLUTION_MS = 5;
const TIMED_CALLS = 2;

/** whisper.cpp's version from a tree's CMakeLists.txt (`project("whisper.cpp" VERSION x.y.z)`), or null. */
function treeVersion(dir) {
  try {
    return /project\("?whisper\.cpp"?\s+VERSION\s+([\d.]+)\)/.exec(
      readFileSync(join(dir, 'CMakeLists.txt'), 'utf8'),
    )[1];
  } catch {
    try {
      const text = readFileSync(join(dir, 'CMakeLists.txt'), 'utf8');
      const part = (name) => new RegExp(`set\\(WHISPER_VERSION_${name}\\s+(\\d+)\\)`).exec(text)[1];
      return `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`;
    } catch {
      return null;
    }
  }
}

const installedVersion = (name) => {
  try {
    return JSON.parse(readFileSync(join(packageDir(name), 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
};

/** The addon voxmill loads (src/native.ts's order) and, when it is the one built here, how CMake configured it. */
function voxmillAddon() {
  const built = join(root, 'build', 'Release', 'voxmill.node');
  const path =
    process.env.VOXMILL_ADDON_PATH ??
    (existsSync(built) ? built : join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'voxmill.node'));
  if (path !== built) return { path, build: 'prebuilt' };
  let cache = '';
  try {
    cache = readFileSync(join(root, 'build', 'CMakeCache.txt'), 'utf8');
  } catch {
    return { path, build: 'unknown' };
  }
  const on = (name) => new RegExp(`^${name}:BOOL=(ON|TRUE|1)$`, 'mi').test(cache);
  return {
    path,
    build: `${on('GGML_NATIVE') ? 'native' : 'portable'}${on('GGML_BLAS') ? ' + OpenBLAS' : ', no BLAS'}`,
  };
}

const nodejsWhisperTree = () => join(packageDir('nodejs-whisper'), 'cpp', 'whisper.cpp');
const whisperNodeTree = () => join(packageDir('whisper-node'), 'lib', 'whisper.cpp');
const smartWhisperAddon = () => join(packageDir('smart-whisper'), 'build', 'Release', 'smart-whisper.node');

/**
 * The engines: `spawns` (a whisper binary per call), `threads` (whether the API takes a thread count), `decoding`
 * (what it runs with this bench's options), `whisperCpp`
 * (the tree's version, where it says), `built` (the file setup makes, when it makes one) and `build` (how).
 */
const ENGINES = {
  voxmill: {
    spawns: false,
    threads: true,
    decoding: 'greedy',
    version: () => JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version,
    whisperCpp: () =>
      treeVersion(
        join(
          dirname(createRequire(join(root, 'package.json')).resolve('whisper-cpp-src/package.json')),
          'cpp',
          'whisper.cpp',
        ),
      ),
  },
  '@fugood/whisper.node': {
    spawns: false,
    threads: true,
    decoding: 'greedy',
    whisperCpp: () => treeVersion(join(packageDir('@fugood/whisper.node'), 'whisper.cpp')),
  },
  'smart-whisper': {
    spawns: false,
    threads: true,
    decoding: 'greedy',
    whisperCpp: () => 'mid-2024 tree, no version file',
    built: smartWhisperAddon,
    build: () => {
      // npm rebuild runs its install script (node-gyp rebuild); --nodedir: this Node's own headers, no download.
      const nodedir = dirname(dirname(process.execPath));
      if (!existsSync(join(nodedir, 'include', 'node', 'node_api.h')))
        throw new Error(`no Node headers under ${nodedir}/include/node (node-gyp would download them)`);
      return run('npm', ['rebuild', 'smart-whisper', '--prefix', peersDir, `--nodedir=${nodedir}`], peersDir);
    },
  },
  '@napi-rs/whisper': {
    spawns: false,
    threads: true,
    decoding: 'greedy',
    whisperCpp: () => 'bundled, version not shipped',
  },
  'nodejs-whisper': {
    spawns: true,
    threads: false,
    decoding: 'beam 5 (default)',
    whisperCpp: () => treeVersion(nodejsWhisperTree()),
    built: () => join(nodejsWhisperTree(), 'build', 'bin', 'whisper-cli'),
    build: () => {
      // Its own configure command (dist/buildConfig.js), then its build command with -j.
      const { getCmakeConfigureCommand } = peerRequire('nodejs-whisper/dist/buildConfig.js');
      const [cmake, ...configure] = getCmakeConfigureCommand(false).split(' ');
      return [
        run(cmake, configure, nodejsWhisperTree()),
        run(
          'cmake',
          ['--build', 'build', '--config', 'Release', '-j', String(availableParallelism())],
          nodejsWhisperTree(),
        ),
      ].join('\n');
    },
  },
  'whisper-node': {
    spawns: true,
    threads: false,
    decoding: 'beam 5 (default)',
    whisperCpp: () => treeVersion(whisperNodeTree()),
    built: () => join(whisperNodeTree(), 'main'),
    build: () => run('make', ['-j', String(availableParallelism())], whisperNodeTree()),
  },
};

const FLAGS = {
  repeats: flag.integer('repeats; each starts one fresh process per engine', 3),
  quick: flag.boolean('1 repeat, jfk only'),
  engines: flag.list('engines (voxmill is always measured: the ratios need it)', ENGINES),
  audio: flag.list('files in the shared test data', AUDIO),
  threads: flag.integer('threads where the API takes a thread count', 1),
};

/** Runs a command to its end; throws with its output's end when it fails. Returns the command line. */
function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.slice(-1500) || String(result.error);
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${output}`);
  }
  return `${command} ${args.join(' ')} (in ${cwd})`;
}

/**
 * Installs the pinned peers when a version differs and builds what is missing; returns, per peer, `ok`, the steps
 * run this time and the reason when it cannot be used.
 */
function setupPeers(names) {
  const status = {};
  const peers = names.filter((name) => name !== 'voxmill');
  if (peers.some((name) => installedVersion(name) !== PINS[name])) {
    mkdirSync(peersDir, { recursive: true });
    const pins = Object.entries(PINS).map(([name, version]) => `${name}@${version}`);
    process.stderr.write(`node-peers: npm install ${pins.join(' ')} into ${peersDir}\n`);
    try {
      run(
        'npm',
        ['install', '--prefix', peersDir, '--ignore-scripts', '--save-exact', '--no-audit', '--no-fund', ...pins],
        peersDir,
      );
    } catch (error) {
      for (const name of peers) status[name] = { ok: false, reason: `npm install failed: ${error.message}` };
      return status;
    }
  }
  for (const name of peers) {
    const engine = ENGINES[name];
    if (installedVersion(name) !== PINS[name]) {
      status[name] = { ok: false, reason: `${name}@${PINS[name]} is not installed` };
      continue;
    }
    if (!engine.built || existsSync(engine.built())) {
      status[name] = { ok: true, steps: [] };
      continue;
    }
    process.stderr.write(`node-peers: building ${name} (once)\n`);
    try {
      status[name] = { ok: true, steps: [engine.build()] };
      if (!existsSync(engine.built())) throw new Error(`the build made no ${engine.built()}`);
    } catch (error) {
      status[name] = { ok: false, reason: `build failed: ${error.message}` };
    }
  }
  return status;
}

// --- the child: one engine in one process ------------------------------------------------------------------------

/** 16-bit PCM mono WAV as float32 samples (smart-whisper takes PCM only). */
function readWav(path) {
  const bytes = readFileSync(path);
  let at = 12;
  let format;
  while (at + 8 <= bytes.length) {
    const id = bytes.toString('ascii', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ') format = { channels: bytes.readUInt16LE(at + 10), bits: bytes.readUInt16LE(at + 22) };
    if (id === 'data') {
      if (format?.channels !== 1 || format?.bits !== 16) throw new Error(`${path}: not 16-bit mono PCM`);
      const samples = new Float32Array(size / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(at + 8 + 2 * i) / 32768;
      return samples;
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${path}: no data chunk`);
}

// Every peer is a CommonJS package: required from the peers' folder.
const importPeer = async (specifier) => peerRequire(specifier);

/** Per engine: load() once, then transcribe(path) -> text, and close(). */
const ADAPTERS = {
  async voxmill({ model, threads }) {
    const { createSpeech } = await import(distEntry);
    const speech = createSpeech({
      models: { bench: { model, beamSize: 1, threads, dtw: false } },
      vadModel: null,
      vad: false,
      cpuThreads: threads,
    });
    return {
      load: () => speech.loadModel('bench'),
      transcribe: async (path) => (await speech.transcribe(path, { model: 'bench', language: 'en' })).text,
      close: () => speech.close(),
    };
  },
  async '@fugood/whisper.node'({ model, threads }) {
    const { initWhisper } = await importPeer('@fugood/whisper.node');
    let context;
    return {
      load: async () => {
        context = await initWhisper({ filePath: model, useGpu: false, useFlashAttn: true });
      },
      transcribe: async (path) =>
        (await context.transcribeFile(path, { language: 'en', maxThreads: threads }).promise).result,
      close: () => context.release(),
    };
  },
  async 'smart-whisper'({ model, threads }) {
    const { Whisper } = await importPeer('smart-whisper');
    const whisper = new Whisper(model, { gpu: false });
    return {
      load: () => whisper.load(),
      transcribe: async (path) => {
        const task = await whisper.transcribe(readWav(path), {
          strategy: 0, // WHISPER_SAMPLING_GREEDY
          best_of: 5,
          language: 'en',
          n_threads: threads,
          print_progress: false,
          format: 'simple',
        });
        return (await task.result).map((segment) => segment.text).join('');
      },
      close: () => whisper.free(),
    };
  },
  async '@napi-rs/whisper'({ model, threads }) {
    const { Whisper, WhisperFullParams, WhisperSamplingStrategy, decodeAudio } = await importPeer('@napi-rs/whisper');
    let whisper;
    return {
      load: () => {
        whisper = new Whisper(model, { useGpu: false, flashAttn: true });
      },
      transcribe: (path) => {
        const samples = decodeAudio(readFileSync(path), basename(path));
        const params = new WhisperFullParams(WhisperSamplingStrategy.Greedy);
        params.nThreads = threads;
        params.language = 'en';
        params.printProgress = false;
        params.printRealtime = false;
        params.printTimestamps = false;
        return whisper.full(params, samples);
      },
      close: () => {},
    };
  },
  async 'nodejs-whisper'({ model }) {
    const { nodewhisper } = await importPeer('nodejs-whisper');
    // It takes a model name and a folder: the file, linked under the name it expects for tiny.en.
    const modelRoot = mkdtempSync(join(tmpdir(), 'voxmill-node-peers-'));
    symlinkSync(model, join(modelRoot, 'ggml-tiny.en.bin'));
    const quiet = { debug: () => {}, log: () => {}, error: (...args) => console.error(...args) };
    return {
      load: () => {},
      transcribe: async (path) => {
        const stdout = await nodewhisper(path, {
          modelName: 'tiny.en',
          modelRootPath: modelRoot,
          removeWavFileAfterTranscription: false,
          whisperOptions: { language: 'en' },
          logger: quiet,
        });
        return stdout.replace(/\[[\d:.]+ --> [\d:.]+\]/g, ' ');
      },
      close: () => rmSync(modelRoot, { recursive: true, force: true }),
    };
  },
  async 'whisper-node'({ model }) {
    // Importing it moves the process into its whisper.cpp tree (shelljs cd), where each call runs ./main.
    const { whisper } = await importPeer('whisper-node');
    return {
      load: () => {},
      transcribe: async (path) => {
        const segments = await whisper(path, { modelPath: model, whisperOptions: { language: 'en' } });
        if (!Array.isArray(segments)) throw new Error('whisper-node returned no transcript (see its output above)');
        return segments.map((segment) => segment.speech).join(' ');
      },
      close: () => {},
    };
  },
};

const hwmKb = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);

/** One call, timed, with the longest stretch the event loop could not run. */
async function timedCall(transcribe, path) {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  // Its first tick only starts its clock: a call that blocks before that tick would go unseen.
  await new Promise((done) => setTimeout(done, 3 * LOOP_RESOLUTION_MS));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const text = await transcribe(path);
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  // A loop blocked to the end of the call has its late tick still to come.
  await new Promise((done) => setTimeout(done, 4 * LOOP_RESOLUTION_MS));
  loop.disable();
  const maxBlockMs = Math.max(0, loop.max / 1e6 - LOOP_RESOLUTION_MS);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, maxBlockMs, text };
}

async function child(task) {
  const engine = await ADAPTERS[task.engine](task);
  const loadStarted = performance.now();
  await engine.load();
  const loadMs = performance.now() - loadStarted;
  const warmup = await timedCall(engine.transcribe, task.files[0].path);
  const files = {};
  for (const file of task.files) {
    const calls = [];
    for (let i = 0; i < TIMED_CALLS; i++) calls.push(await timedCall(engine.transcribe, file.path));
    files[file.name] = {
      wallMs: median(calls.map((c) => c.wallMs)),
      maxBlockMs: Math.max(...calls.map((c) => c.maxBlockMs)),
      calls: calls.map(({ text: _text, ...rest }) => rest),
      text: calls[0].text.trim(),
    };
  }
  const peakKb = hwmKb();
  await engine.close();
  printChildResult({
    loadMs: ENGINES[task.engine].spawns ? null : loadMs,
    warmupMs: warmup.wallMs,
    hwmKb: peakKb,
    files,
  });
}

// --- the parent ------------------------------------------------------------------------------------------------

/** The processes below `pid` (children of each of its threads, recursively). */
function descendants(pid) {
  const found = [];
  const stack = [pid];
  while (stack.length > 0) {
    const at = stack.pop();
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${at}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      let text = '';
      try {
        text = readFileSync(`/proc/${at}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of text.split(/\s+/).filter(Boolean).map(Number)) {
        found.push(child);
        stack.push(child);
      }
    }
  }
  return found;
}

/** Polls the VmHWM of every process below `pid` every 20 ms; stop() returns the largest, by command name. */
function watchTree(pid) {
  const peaks = {};
  const timer = setInterval(() => {
    for (const p of descendants(pid)) {
      try {
        const name = readFileSync(`/proc/${p}/comm`, 'utf8').trim();
        const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
        peaks[name] = Math.max(peaks[name] ?? 0, kb);
      } catch {
        // It has just exited.
      }
    }
  }, 20);
  return () => {
    clearInterval(timer);
    return peaks;
  };
}

/** One fresh process for `engine`: its childResult plus the spawned processes' peaks; `error` when it failed. */
async function runEngine(engine, task) {
  const started = performance.now();
  const proc = spawn(process.execPath, [self, '--child', JSON.stringify({ ...task, engine })], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = ENGINES[engine].spawns ? watchTree(proc.pid) : () => ({});
  const output = collectOutput(proc);
  const code = await new Promise((done, fail) => {
    proc.on('error', fail);
    proc.on('close', done);
  });
  const spawned = stop();
  const result = code === 0 ? childResult(output.stdout) : undefined;
  if (result === undefined) return { error: `exit ${code}: ${output.stderr.slice(-1500)}` };
  // The whisper binary: the largest process it spawned (shells and shelljs's helper Node are smaller).
  const [spawnedName, spawnedHwmKb] = Object.entries(spawned).sort((a, b) => b[1] - a[1])[0] ?? [null, 0];
  return {
    ...result,
    spawnedName,
    spawnedHwmKb,
    spawnedPeaks: spawned,
    peakRssKb: result.hwmKb + spawnedHwmKb,
    processWallMs: performance.now() - started,
  };
}

const fixed = (value, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : '—');

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  const line = (row) => row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.slice(1).map(line)].join('\n');
}

async function main() {
  const { settings } = benchArgs('npm run bench:node-peers [-- options]', FLAGS, {
    quick: { repeats: 1, audio: ['jfk'] },
  });
  ensureDist();
  const model = realModels(['whisper-tiny.en'])['whisper-tiny.en'];
  const engineNames = ['voxmill', ...settings.engines.filter((name) => name !== 'voxmill')];
  const setup = setupPeers(engineNames);
  const usable = engineNames.filter((name) => name === 'voxmill' || setup[name].ok);
  const versions = Object.fromEntries(
    engineNames.map((name) => [
      name,
      {
        package: ENGINES[name].version?.() ?? installedVersion(name),
        whisperCpp: ENGINES[name].whisperCpp(),
        ...(name === 'voxmill' ? { addon: voxmillAddon() } : {}),
      },
    ]),
  );
  const files = settings.audio.map((name) => ({ name, path: sharedAudio(AUDIO[name]) }));
  const task = { model, threads: settings.threads, files };
  const references = readReferences();
  const machine = { ...machineFacts(), loadAverageAtStart: loadavg() };
  process.stdout.write(
    `voxmill vs Node.js whisper bindings: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}\n` +
      `model: ${model}\naudio: ${files.map((f) => f.name).join(', ')}; threads ${settings.threads} where settable\n` +
      `${settings.repeats} repeat(s) x ${usable.length} engines, order rotating; load average ${loadAverageText()}\n`,
  );
  for (const name of engineNames.filter((n) => n !== 'voxmill' && !setup[n].ok)) {
    process.stdout.write(`${name}: could not install: ${setup[name].reason}\n`);
  }
  process.stdout.write('\n');

  const runs = [];
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    const order = rotate(usable, repeat);
    const result = { repeat, order, engines: {} };
    for (const engine of order) {
      const r = await runEngine(engine, task);
      result.engines[engine] = r;
      const summary = r.error
        ? `FAILED ${r.error.split('\n')[0]}`
        : `load ${fixed(r.loadMs)} ms, ${files.map((f) => `${f.name} ${fixed(r.files[f.name].wallMs)} ms`).join(', ')}, ` +
          `peak ${fixed(r.peakRssKb / 1024)} MB`;
      process.stdout.write(`[${repeat + 1}/${settings.repeats}] ${engine}: ${summary}\n`);
    }
    runs.push(result);
  }

  const summaries = {};
  for (const name of usable) {
    const ok = runs.map((r) => r.engines[name]).filter((r) => r && !r.error);
    const perFile = {};
    for (const f of files) {
      const ratios = runs
        .map((r) => {
          const peer = r.engines[name];
          const vox = r.engines.voxmill;
          return peer?.error || vox?.error ? Number.NaN : peer.files[f.name].wallMs / vox.files[f.name].wallMs;
        })
        .filter(Number.isFinite);
      const text = ok[0]?.files[f.name].text ?? '';
      perFile[f.name] = {
        warmMs: median(ok.map((r) => r.files[f.name].wallMs)),
        ratio: median(ratios),
        maxBlockMs: Math.max(...ok.map((r) => r.files[f.name].maxBlockMs)),
        wer: references.has(AUDIO[f.name]) && text ? referenceWer(text, references.get(AUDIO[f.name])) : null,
        text,
      };
    }
    summaries[name] = {
      runs: ok.length,
      failed: runs.length - ok.length,
      loadMs: median(ok.map((r) => r.loadMs ?? Number.NaN)),
      peakRssKb: median(ok.map((r) => r.peakRssKb)),
      nodeHwmKb: median(ok.map((r) => r.hwmKb)),
      spawnedHwmKb: ENGINES[name].spawns ? median(ok.map((r) => r.spawnedHwmKb)) : null,
      maxBlockMs: Math.max(...files.map((f) => perFile[f.name].maxBlockMs)),
      files: perFile,
    };
  }

  const header = [
    'engine',
    'version (whisper.cpp)',
    'load ms',
    ...files.map((f) => `${f.name} warm ms`),
    'peak RSS MB',
    ...files.map((f) => `ratio ${f.name}`),
    'loop block ms',
    'threads',
    'decoding',
    ...files.map((f) => `WER ${f.name}`),
  ];
  const rows = [header];
  for (const name of engineNames) {
    const v = versions[name];
    const version = `${v.package ?? '?'} (${v.whisperCpp ?? '?'}${v.addon ? `, ${v.addon.build}` : ''})`;
    const s = summaries[name];
    if (!s || s.runs === 0) {
      const why = s ? 'every run failed' : `could not install: ${setup[name].reason.split('\n')[0]}`;
      rows.push([name, version, why, ...header.slice(3).map(() => '')]);
      continue;
    }
    rows.push([
      name,
      version,
      ENGINES[name].spawns ? 'per call' : fixed(s.loadMs),
      ...files.map((f) => fixed(s.files[f.name].warmMs)),
      `${fixed(s.peakRssKb / 1024)}${ENGINES[name].spawns ? '*' : ''}`,
      ...files.map((f) => (name === 'voxmill' ? '1' : fixed(s.files[f.name].ratio, 2))),
      fixed(s.maxBlockMs),
      ENGINES[name].threads ? String(settings.threads) : `default (${Math.min(4, availableParallelism())})`,
      ENGINES[name].decoding,
      ...files.map((f) => (s.files[f.name].wer === null ? '—' : `${fixed(100 * s.files[f.name].wer, 1)}%`)),
    ]);
  }
  process.stdout.write(
    `\n${table(rows)}\n\nwarm ms: median of the ${TIMED_CALLS} timed calls, then of the repeats; ratio: peer / voxmill, ` +
      `median of per-repeat ratios (above 1: voxmill faster); loop block: the event loop's longest block in a call.\n` +
      `* Node's VmHWM plus the largest process it spawned (the whisper binary), which load the model on every call.\n` +
      `load average at end: ${loadAverageText()}\n`,
  );
  const outFile = writeResults('node-peers', {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { ...machine, loadAverageAtEnd: loadavg() },
    settings,
    model,
    peersDir,
    pins: PINS,
    versions,
    setup,
    method: {
      timedCallsPerFile: TIMED_CALLS,
      warmup: `one call on ${files[0].name}`,
      loopResolutionMs: LOOP_RESOLUTION_MS,
      peakRss: 'VmHWM after the last call; spawning engines: plus the largest spawned process (polled every 20 ms)',
      threads: Object.fromEntries(engineNames.map((n) => [n, ENGINES[n].threads ? settings.threads : 'not settable'])),
      decoding: Object.fromEntries(engineNames.map((n) => [n, ENGINES[n].decoding])),
    },
    summaries,
    runs,
  });
  process.stdout.write(`Raw results: ${outFile}\n`);
}

if (isEntry(import.meta.url)) {
  const at = process.argv.indexOf('--child');
  if (at >= 0) await child(JSON.parse(process.argv[at + 1]));
  else runMain('node-peers', main);
}
