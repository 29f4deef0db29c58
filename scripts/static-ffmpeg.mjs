#!/usr/bin/env node
// FFmpeg for the addon, built from source with only what voxmill uses, as static libraries to link into voxmill.node
// (VOXMILL_FFMPEG=static, the default of scripts/build-native.mjs): the addon then loads no libav* of the system, and
// one build runs on every Linux of its architecture.
//
// What is built (sources from Debian's source packages, pinned by version and sha256 in scripts/native-deps.mjs):
//   LAME 3.100           the mp3 encoder (libmp3lame)
//   Opus 1.3.1           the opus encoder (libopus); picks its SSE4.1/AVX/NEON code at run time (--enable-rtcd)
//   FFmpeg 5.1.9         libavformat, libavcodec, libswresample, libavutil, with
//     demuxers           wav w64 mp3 ogg flac mov matroska aac aiff caf au (native/audio_decode.cc's whitelist)
//     decoders           PCM (integer, float, a-law, mu-law), MS and IMA ADPCM, mp1/mp2/mp3, AAC, ALAC, FLAC,
//                        Vorbis, Opus (FFmpeg's own decoders: no libvorbis or libogg is needed)
//     encoders, muxers   libmp3lame, libopus, aac, flac, pcm_s16le; mp3, ogg, adts, flac, wav, s16le
//                        (native/audio_encode.cc's formats)
//   No programs, devices, filters, network, hardware or other autodetected libraries (zlib, iconv, ...). No -march:
//   the compiler's baseline for the target; FFmpeg picks its SIMD code at run time. On x64 that code is assembled by
//   nasm (scripts/setup-system.sh installs it): without nasm the build goes on without it, with a warning, and FLAC and
//   Opus decode up to 2x slower (BENCHMARKS.md, "npm install works on every Linux").
//
//   node scripts/static-ffmpeg.mjs [--arch x64|arm64] [--glibc 2.28]   builds what is missing; prints the prefix
//   import { staticFfmpeg } from './static-ffmpeg.mjs'                  the same, as a promise of the prefix folder
//
// The prefix (<cache>/ffmpeg-static/<arch>-<edition>/, with include/ and lib/) is made once per architecture and
// edition (a hash of the versions and options below) and reused; a build goes to a scratch folder first
// (.<arch>-XXXXXX/, kept with its logs when the build fails) and a complete prefix is never replaced. Another
// architecture is cross-compiled with Debian's <host>-gcc (for arm64 on x86-64: scripts/arm64/setup.sh); a machine's
// own with its gcc. With a glibc to build for (`--glibc 2.28`, VOXMILL_GLIBC of build-native.mjs), zig's compiler
// builds for either architecture instead (scripts/zig-toolchain.mjs), into its own edition. Editions no longer used
// stay in the cache until it is cleared.
//
// Environment: VOXMILL_DEPS_CACHE, VOXMILL_DEBIAN_MIRROR (as scripts/native-deps.mjs), VOXMILL_BUILD_JOBS (default: the
// number of CPUs).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cacheDir, fetched, PINNED, unpack } from './native-deps.mjs';
import { zigToolchain } from './zig-toolchain.mjs';

const DECODERS = [
  'aac',
  'aac_latm',
  'alac',
  'flac',
  'mp1float',
  'mp2float',
  'mp3float',
  'vorbis',
  'opus',
  'adpcm_ima_wav',
  'adpcm_ms',
  'pcm_alaw',
  'pcm_mulaw',
  'pcm_s8',
  'pcm_u8',
  ...['s16', 's24', 's32', 'f32', 'f64'].flatMap((format) => [`pcm_${format}le`, `pcm_${format}be`]),
];
const DEMUXERS = ['wav', 'w64', 'mp3', 'ogg', 'flac', 'mov', 'matroska', 'aac', 'aiff', 'caf', 'au'];
const PARSERS = ['aac', 'aac_latm', 'flac', 'mpegaudio', 'opus', 'vorbis'];
const ENCODERS = ['libmp3lame', 'libopus', 'aac', 'flac', 'pcm_s16le'];
const MUXERS = ['mp3', 'ogg', 'adts', 'flac', 'wav', 'pcm_s16le'];

/** The C compiler flags of every library: position-independent (linked into a shared object), optimised, no -march. */
const CFLAGS = '-O2 -fPIC -fno-strict-overflow';

/** Where each architecture's libraries are built: the host's compiler, or Debian's cross compiler. */
const TARGETS = {
  x64: { host: 'x86_64-linux-gnu', ffmpegArch: 'x86_64' },
  arm64: { host: 'aarch64-linux-gnu', ffmpegArch: 'aarch64' },
};

function ffmpegOptions(prefix, target) {
  const list = (kind, names) => `--enable-${kind}=${names.join(',')}`;
  return [
    `--prefix=${prefix}`,
    '--enable-static',
    '--disable-shared',
    '--enable-pic',
    '--disable-everything',
    '--disable-autodetect',
    '--disable-programs',
    '--disable-doc',
    '--disable-network',
    '--disable-avdevice',
    '--disable-avfilter',
    '--disable-swscale',
    '--disable-postproc',
    '--disable-debug',
    ...(target.x86asm ? [] : ['--disable-x86asm']),
    '--enable-libmp3lame',
    '--enable-libopus',
    list('decoder', DECODERS),
    list('demuxer', DEMUXERS),
    list('parser', PARSERS),
    list('encoder', ENCODERS),
    list('muxer', MUXERS),
    `--extra-cflags=${CFLAGS} -I${prefix}/include`,
    `--extra-ldflags=-L${prefix}/lib`,
    ...(target.crossPrefix
      ? ['--enable-cross-compile', `--cross-prefix=${target.crossPrefix}`, `--arch=${target.ffmpegArch}`]
      : []),
    ...(target.zig
      ? [
          `--cc=${target.zig.cc}`,
          `--cxx=${target.zig.cxx}`,
          `--ar=${target.zig.ar}`,
          `--ranlib=${target.zig.ranlib}`,
          ...(target.zig.cross ? ['--enable-cross-compile', `--arch=${target.ffmpegArch}`] : []),
        ]
      : []),
    '--target-os=linux',
    // libopus is found through pkg-config, reading only the opus.pc this script installed into the prefix.
    '--pkg-config=pkg-config',
    '--pkg-config-flags=--static',
  ];
}

/** Whether nasm can assemble FFmpeg's x86 code here (only x64 has any). */
function hasNasm() {
  const nasm = spawnSync('nasm', ['-v']);
  return !nasm.error && nasm.status === 0;
}

/** A short hash of everything that decides what is built: a change makes a new prefix instead of reusing the old. */
function edition(target) {
  const what = JSON.stringify([
    PINNED.ffmpegSource.sha256,
    PINNED.lameSource.sha256,
    PINNED.opusSource.sha256,
    CFLAGS,
    // The zig toolchain by what it is, not where it is cached.
    ffmpegOptions('', { ...target, zig: target.zig && { cross: target.zig.cross } }),
    target.zig ? [target.zig.version, target.zig.triple] : 'gcc',
  ]);
  return createHash('sha256').update(what).digest('hex').slice(0, 12);
}

/**
 * FFmpeg's configure finds sysctl() in zig's stubs of glibc 2.28 (glibc dropped it in 2.32), but zig's glibc headers
 * are newer and have no <sys/sysctl.h>: the check goes, and with it a call Linux never needed (it counts CPUs on BSD).
 */
function withoutSysctl(configure) {
  const text = readFileSync(configure, 'utf8');
  const check = /^check_func {2}sysctl$/m;
  if (!check.test(text)) throw new Error(`${configure} has no 'check_func  sysctl' line to leave out for zig`);
  writeFileSync(configure, text.replace(check, '# check_func  sysctl: left out by voxmill for zig'));
}

/** Runs one build step, its output appended to `log`; resolves with its milliseconds, rejects with its last lines. */
function run(command, args, cwd, env, log) {
  const started = Date.now();
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = [];
    const keep = (chunk) => {
      appendFileSync(log, chunk);
      lines.push(...chunk.toString().split('\n'));
      lines.splice(0, Math.max(0, lines.length - 25));
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (error) => fail(new Error(`${command} in ${cwd}: ${error.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) done(Date.now() - started);
      else
        fail(
          new Error(`${command} ${args[0] ?? ''} in ${cwd} failed (${signal ?? `exit ${code}`}):\n${lines.join('\n')}`),
        );
    });
  });
}

/** configure, then make install, of an autotools library into the prefix. */
async function buildLibrary(tree, configureArgs, env, jobs, log) {
  const configured = await run('./configure', configureArgs, tree, env, log);
  return configured + (await run('make', [`-j${jobs}`, 'install'], tree, env, log));
}

/**
 * The prefix with FFmpeg's static libraries for `arch`, built when missing; with `glibc` ("2.28"), built by zig for
 * that glibc.
 */
export async function staticFfmpeg(arch = process.arch, glibc = '') {
  if (!TARGETS[arch]) throw new Error(`FFmpeg can be built for x64 and arm64, not '${arch}'`);
  const zig = glibc ? await zigToolchain(arch, glibc) : null;
  // Cross-compiled only for another architecture (Debian's <host>-gcc, or zig); on its own, with the machine's gcc.
  const crossPrefix = zig || arch === process.arch ? null : `${TARGETS[arch].host}-`;
  const target = { ...TARGETS[arch], crossPrefix, zig, x86asm: arch === 'x64' && hasNasm() };
  if (arch === 'x64' && !target.x86asm) {
    console.error("voxmill: nasm not found: FFmpeg's x86 SIMD code is left out (apt-get install nasm puts it in)");
  }
  const prefix = join(cacheDir(), 'ffmpeg-static', `${arch}-${zig ? `glibc${zig.glibc}-` : ''}${edition(target)}`);
  if (existsSync(join(prefix, 'lib', 'libavformat.a'))) return prefix;

  const cc = zig ? zig.cc : `${target.crossPrefix ?? ''}gcc`;
  const probe = spawnSync(cc, ['--version']);
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `${cc} not found: ${crossPrefix ? `install Debian's cross compiler (for arm64 on x86-64: bash scripts/arm64/setup.sh)` : 'apt-get install build-essential'}`,
    );
  }
  const make = spawnSync('make', ['--version']);
  if (make.error || make.status !== 0) throw new Error('make not found: apt-get install build-essential');
  const sources = {
    lame: await fetched(PINNED.lameSource),
    opus: await fetched(PINNED.opusSource),
    ffmpeg: await fetched(PINNED.ffmpegSource),
  };
  mkdirSync(join(cacheDir(), 'ffmpeg-static'), { recursive: true });
  const scratch = mkdtempSync(join(cacheDir(), 'ffmpeg-static', `.${arch}-`));
  const built = join(scratch, 'prefix');
  const log = join(scratch, 'ffmpeg.log');
  console.error(`voxmill: building FFmpeg 5.1.9, LAME and Opus for linux-${arch} (once; cached in ${prefix})`);
  const jobs = process.env.VOXMILL_BUILD_JOBS || String(availableParallelism());
  const env = { ...process.env, CC: cc, CFLAGS, LC_ALL: 'C', ...(zig ? { AR: zig.ar, RANLIB: zig.ranlib } : {}) };
  const hostArgs = target.crossPrefix || zig?.cross ? [`--host=${target.host}`] : [];
  const times = {};
  let done = false;
  try {
    for (const [name, archive] of Object.entries(sources)) unpack(archive, join(scratch, name));
    const tree = (name, folder) => join(scratch, name, folder);
    if (zig) withoutSysctl(join(tree('ffmpeg', 'ffmpeg-5.1.9'), 'configure'));
    const library = ['--enable-static', '--disable-shared', '--with-pic', `--prefix=${built}`, ...hostArgs];
    // The two codec libraries build side by side: their configure scripts run on one core each.
    [times.lame, times.opus] = await Promise.all([
      buildLibrary(
        tree('lame', 'lame-3.100'),
        [...library, '--disable-frontend', '--disable-decoder', '--disable-gtktest'],
        env,
        jobs,
        join(scratch, 'lame.log'),
      ),
      buildLibrary(
        tree('opus', 'opus-1.3.1'),
        [...library, '--disable-doc', '--disable-extra-programs'],
        env,
        jobs,
        join(scratch, 'opus.log'),
      ),
    ]);
    const ffmpegEnv = { ...env, PKG_CONFIG_LIBDIR: join(built, 'lib', 'pkgconfig'), PKG_CONFIG_PATH: '' };
    times.ffmpeg = await buildLibrary(
      tree('ffmpeg', 'ffmpeg-5.1.9'),
      [...ffmpegOptions(built, target), ...(zig ? [] : [`--cc=${cc}`])],
      ffmpegEnv,
      jobs,
      log,
    );
    writeFileSync(
      join(built, 'voxmill-ffmpeg.json'),
      `${JSON.stringify({ arch, edition: edition(target), compiler: zig ? `zig ${zig.version} ${zig.triple}` : cc, x86asm: target.x86asm, seconds: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(v / 100) / 10])) }, null, 2)}\n`,
    );
    // Another process may have finished the same edition meanwhile: a complete prefix is never replaced.
    if (!existsSync(join(prefix, 'lib', 'libavformat.a'))) {
      rmSync(prefix, { recursive: true, force: true });
      try {
        renameSync(built, prefix);
      } catch (error) {
        if (!existsSync(join(prefix, 'lib', 'libavformat.a'))) throw error;
      }
    }
    done = true;
    return prefix;
  } catch (error) {
    error.message += `\n(the logs are kept in ${scratch})`;
    throw error;
  } finally {
    // A failed build keeps its scratch folder for the logs; a finished one leaves nothing behind.
    if (done) rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const archAt = process.argv.indexOf('--arch');
  const arch = archAt > 0 ? process.argv[archAt + 1] : process.arch;
  const glibcAt = process.argv.indexOf('--glibc');
  const started = Date.now();
  try {
    const prefix = await staticFfmpeg(arch, glibcAt > 0 ? process.argv[glibcAt + 1] : '');
    console.error(`voxmill: static FFmpeg for linux-${arch} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log(prefix);
  } catch (error) {
    console.error(`voxmill: static FFmpeg: ${error.message}`);
    process.exit(1);
  }
}
