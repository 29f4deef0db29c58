#!/usr/bin/env node
// The third-party pieces the addon builds with besides whisper.cpp and FFmpeg, fetched from registries at build
// time, pinned by version and sha256, cached outside the repository and never copied into it:
//   ONNX Runtime's C API headers  Debian 13's libonnxruntime-dev 1.21.0+dfsg-1 (a .deb; the C API is versioned, so
//                                 these headers serve any newer library)
//   libonnxruntime.so.1           onnxruntime 1.32.0's wheels on the Python package index (manylinux_2_28 x86_64 and
//                                 aarch64: GLIBC 2.28), the C API library they carry beside the Python binding.
//                                 Measured against onnxruntime-node 1.30.0's library (the first choice): the joe voice
//                                 loads in 373 ms against 892 ms, and a sentence runs in 188 ms against 210 ms
//   espeak-ng's sources           Debian's espeak-ng_1.52.0+dfsg.orig.tar.gz
//   OpenBLAS                      scipy-openblas32 0.3.31.188.0's wheels (bundledOpenblas: only for VOXMILL_BLAS=bundled)
//   espeak-ng's data              piper-phonemize 1.4.11's npm package (its espeak-ng-data/): the data Piper's voices
//                                 were trained with. espeak-ng 1.52.0's own English dictionary says "ɔːɹ" where this
//                                 data says "oːɹ" (35 of 142 test sentences phonemized otherwise), and the voices learnt
//                                 the latter. espeak-ng 1.52.0's code reads this data to the same phonemes as
//                                 piper-phonemize's own build in 20 languages (BENCHMARKS.md, "Piper inside the addon").
//
//   node scripts/native-deps.mjs [--arch x64|arm64]   fetches what is missing; prints the CMake -D options, one a line
//   import { nativeDeps } from './native-deps.mjs'     the same as { VOXMILL_ORT_INCLUDE_DIR: path, ... }
//
// Environment:
//   VOXMILL_DEPS_CACHE     the cache folder (default ~/.cache/voxmill/native-deps)
//   VOXMILL_DEBIAN_MIRROR  a Debian mirror (default http://deb.debian.org/debian; the files are checked by sha256)
//   VOXMILL_PYPI_MIRROR    a mirror of files.pythonhosted.org (default https://files.pythonhosted.org)
//   npm's own settings     the npm packages come through `npm pack` (its registry, proxy and cache)
//   VOXMILL_ORT_INCLUDE_DIR, VOXMILL_ORT_LIBRARY, VOXMILL_ESPEAK_DIR, VOXMILL_ESPEAK_DATA_DIR, VOXMILL_OPENBLAS_DIR
//                          use these instead of fetching (an offline build, other versions)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const debianMirror = (process.env.VOXMILL_DEBIAN_MIRROR || 'http://deb.debian.org/debian').replace(/\/+$/, '');
const pypiFiles = (process.env.VOXMILL_PYPI_MIRROR || 'https://files.pythonhosted.org').replace(/\/+$/, '');

/** What is fetched, pinned. `unpack` lists the paths (inside the archive) a dependency keeps. */
export const PINNED = {
  ortHeaders: {
    file: 'libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb',
    url: () => `${debianMirror}/pool/main/o/onnxruntime/libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb`,
    sha256: '14f7d959d5deacbcf1504830d4189f91fc67382b399ed9ae9d3aa9c4050ced08',
    licence: 'MIT (ONNX Runtime)',
  },
  ortLibrary: {
    x64: {
      file: 'onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl',
      url: () =>
        `${pypiFiles}/packages/1d/46/e6f356c9539d2eed44126de3421a81e217da2ad91b22dc11b379cb1e384f/` +
        'onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl',
      sha256: '5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d',
      licence: 'MIT (ONNX Runtime)',
    },
    arm64: {
      file: 'onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl',
      url: () =>
        `${pypiFiles}/packages/b7/30/103820b32e9dc1d1fcfc5b519fd2de5bd699d25a25895caf5d726350d1b5/` +
        'onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl',
      sha256: '2303372a85299b6757b0e11e1cbf13e410ddf7e10c37f4b37e99d1c90e7daf7c',
      licence: 'MIT (ONNX Runtime)',
    },
  },
  espeakSource: {
    file: 'espeak-ng_1.52.0+dfsg.orig.tar.gz',
    url: () => `${debianMirror}/pool/main/e/espeak-ng/espeak-ng_1.52.0+dfsg.orig.tar.gz`,
    sha256: 'd2a886bae3547a15c52801cb37e415230834a7ee7f9a57352b98d60454d97cea',
    licence: 'GPL-3.0-or-later (espeak-ng)',
  },
  // FFmpeg and the encoders' libraries, built into static libraries by scripts/static-ffmpeg.mjs.
  ffmpegSource: {
    file: 'ffmpeg_5.1.9.orig.tar.xz',
    url: () => `${debianMirror}/pool/main/f/ffmpeg/ffmpeg_5.1.9.orig.tar.xz`,
    sha256: 'd9b593bb2ba93d4b50f74177e0cdcd41747e708596367deed0c30348a71dd176',
    licence: 'LGPL-2.1-or-later (FFmpeg, as configured: no GPL or nonfree parts)',
  },
  lameSource: {
    file: 'lame_3.100.orig.tar.gz',
    url: () => `${debianMirror}/pool/main/l/lame/lame_3.100.orig.tar.gz`,
    sha256: 'ddfe36cab873794038ae2c1210557ad34857a4b6bdc515785d1da9e175b1da1e',
    licence: 'LGPL-2.0-or-later (LAME)',
  },
  opusSource: {
    file: 'opus_1.3.1.orig.tar.gz',
    url: () => `${debianMirror}/pool/main/o/opus/opus_1.3.1.orig.tar.gz`,
    sha256: '65b58e1e25b2a114157014736a3d9dfeaad8d41be1c8179866f144a2fb44ff9d',
    licence: 'BSD-3-Clause (Opus)',
  },
  // zig 0.14.1 (scripts/zig-toolchain.mjs): the compiler of release builds, for the machine that builds.
  zig: {
    version: '0.14.1',
    x64: {
      file: 'ziglang-0.14.1-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl',
      url: () =>
        `${pypiFiles}/packages/9d/ef/494f128ea7ec3345850bbd75d2cb7b987006fb5601c37543e8fa83e5e3d4/` +
        'ziglang-0.14.1-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl',
      sha256: '6eb9d4d759b292c83810dbee2e9e8e3fbfbf01d864e6e9811bae711fd74e1c2f',
      licence:
        'MIT (zig; it builds the addon; what it links in ships: libc++, libc++abi, libunwind (Apache-2.0 WITH ' +
        'LLVM-exception) and compiler_rt (MIT))',
    },
    arm64: {
      file: 'ziglang-0.14.1-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
      url: () =>
        `${pypiFiles}/packages/94/84/2ca431d4f7984a260b5115a5ab130c1459d0b0ed08c5ae7d4093e52cb4a3/` +
        'ziglang-0.14.1-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
      sha256: '7994b27f3cbfcedea43f9b7552e38b45857bdf0e9a45065474092dd74e7048cf',
      licence:
        'MIT (zig; it builds the addon; what it links in ships: libc++, libc++abi, libunwind (Apache-2.0 WITH ' +
        'LLVM-exception) and compiler_rt (MIT))',
    },
  },
  // OpenBLAS for release builds (VOXMILL_BLAS=bundled): scipy-openblas32's wheels, the OpenBLAS NumPy and SciPy ship
  // (DYNAMIC_ARCH: its kernels chosen at run time for the CPU, Haswell to Sapphire Rapids, and on arm64 Neoverse;
  // manylinux2014: GLIBC_2.17). Its symbols carry a scipy_ prefix (scipy_cblas_sgemm), so it never clashes with
  // another OpenBLAS in the process; libgfortran and libquadmath come with it, found beside it ($ORIGIN).
  openblas: {
    version: '0.3.31.188.0',
    x64: {
      file: 'scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
      url: () =>
        `${pypiFiles}/packages/6f/8e/16aaf7f420206b4578b13f2b259567480757480829a775f8633912684760/` +
        'scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
      sha256: '29534062c634a635c4d86b7f238541a81a39e457048ad3d717f54843530a0112',
      licence:
        'BSD-3-Clause (OpenBLAS, LAPACK), GPL-3.0 with the GCC runtime exception (libgfortran), LGPL-2.1+ (libquadmath)',
    },
    arm64: {
      file: 'scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl',
      url: () =>
        `${pypiFiles}/packages/80/70/3557afb797b322de2960a4747e0960888a45979000f4374a640e69f0b2a9/` +
        'scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl',
      sha256: '630a0f1da08e498221dd74aed1c2e7d33acd0e9c953521ec9e364a4572ebadc1',
      licence:
        'BSD-3-Clause (OpenBLAS, LAPACK), GPL-3.0 with the GCC runtime exception (libgfortran), LGPL-2.1+ (libquadmath)',
    },
  },
  espeakData: {
    file: 'piper-phonemize-1.4.11.tgz',
    npm: 'piper-phonemize@1.4.11',
    sha256: '4a31ed18b6b5d25f3387e93d672b3bd6d7748a3d67ee9fb1e9e15791496d1db9',
    licence: 'GPL-3.0-or-later (espeak-ng data), MIT (piper-phonemize)',
  },
};

export function cacheDir() {
  return resolve(process.env.VOXMILL_DEPS_CACHE || join(homedir(), '.cache', 'voxmill', 'native-deps'));
}

function sha256Of(path) {
  return new Promise((done, fail) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => done(hash.digest('hex')))
      .on('error', fail);
  });
}

/** Downloads `url` to `path` (following redirects), or throws naming the URL. */
function download(url, path, redirects = 5) {
  return new Promise((done, fail) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    const request = get(url, { timeout: 60_000 }, (response) => {
      const { statusCode = 0, headers } = response;
      if (statusCode >= 300 && statusCode < 400 && headers.location && redirects > 0) {
        response.resume();
        download(new URL(headers.location, url).href, path, redirects - 1).then(done, fail);
        return;
      }
      if (statusCode !== 200) {
        response.resume();
        fail(new Error(`GET ${url}: HTTP ${statusCode}`));
        return;
      }
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        writeFileSync(path, Buffer.concat(chunks));
        done();
      });
      response.on('error', fail);
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${url}: no answer for 60 s`)));
    request.on('error', (error) => fail(new Error(`GET ${url}: ${error.message}`)));
  });
}

/** The pinned file in the cache, fetched and checked when missing. */
export async function fetched(dep) {
  const dir = join(cacheDir(), 'files');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, dep.file);
  if (existsSync(path) && (await sha256Of(path)) === dep.sha256) return path;
  const scratch = mkdtempSync(join(dir, '.fetch-'));
  try {
    const part = join(scratch, dep.file);
    if (dep.npm) {
      // npm's own registry, proxy and cache settings apply; its tarball is then checked against our pin.
      const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
      const packed = spawnSync(npm, ['pack', dep.npm, '--pack-destination', scratch, '--silent'], {
        encoding: 'utf8',
        shell: process.platform === 'win32',
      });
      if (packed.status !== 0 || !existsSync(part)) {
        throw new Error(`npm pack ${dep.npm} failed: ${(packed.stderr || packed.error?.message || '').trim()}`);
      }
    } else {
      await download(dep.url(), part);
    }
    const got = await sha256Of(part);
    if (got !== dep.sha256) throw new Error(`${dep.file}: sha256 ${got}, expected ${dep.sha256}`);
    renameSync(part, path);
    return path;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Unpacks `archive` (tar, tar.gz, tar.xz or a .deb: cmake's libarchive reads them all) into a fresh `into`. */
export function unpack(archive, into) {
  mkdirSync(into, { recursive: true });
  const result = spawnSync('cmake', ['-E', 'tar', 'xf', archive], { cwd: into, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`cannot unpack ${archive}: ${(result.stderr || '').trim()}`);
}

/**
 * The unpacked dependency: `<cache>/<name>/`, made once from the pinned file. `keep` is the folder inside the
 * archive that is kept (a .deb's data.tar.xz is unpacked first).
 */
export async function unpacked(name, dep, keep, edition = 0) {
  const target = join(cacheDir(), name);
  const stamp = join(target, '.voxmill-sha256');
  // The edition changes when what is done to the unpacked files changes (ESPEAK_FIXES): then it is unpacked afresh.
  const stamped = `${dep.sha256} ${edition}`;
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === stamped && existsSync(join(target, keep))) {
    return join(target, keep);
  }
  const archive = await fetched(dep);
  const scratch = mkdtempSync(join(cacheDir(), `.${name}-`));
  try {
    unpack(archive, scratch);
    if (archive.endsWith('.deb')) unpack(join(scratch, 'data.tar.xz'), scratch);
    if (!existsSync(join(scratch, keep))) throw new Error(`${dep.file} has no ${keep}`);
    rmSync(target, { recursive: true, force: true });
    mkdirSync(dirname(join(target, keep)), { recursive: true });
    renameSync(join(scratch, keep), join(target, keep));
    writeFileSync(stamp, `${stamped}\n`);
    return join(target, keep);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Memory-safety fixes to espeak-ng 1.52.0, applied to the unpacked sources (the cache, never the repository), each
 * found by scripts/fuzz.sh's phonemizer target with AddressSanitizer on text a user can send. Each replaces one exact
 * piece of text: a release where it is not found once fails the build here, so a fix cannot silently stop applying.
 */
export const ESPEAK_FIXES = [
  {
    // LookupThousands() writes ph_of (up to 12 bytes) and ph_thousands (up to 40) into this buffer of 20: a number
    // like "4104" in Arabic text overflowed LookupNum3's stack.
    file: 'src/libespeak-ng/numbers.c',
    find: '\tchar ph_10T[20];\n',
    replace: '\tchar ph_10T[64]; /* voxmill: LookupThousands writes up to 52 bytes here */\n',
  },
  {
    // InterpretPhoneme's conditions look back along the clause's phoneme list until a word start (CountVowelPosition,
    // isAfterStress, prevPh, prev2PhW), and a list whose first entry starts no word took them in front of it, into
    // MakePhonemeList's other locals (mixed-script text read by the Vietnamese voice). Two pauses that start a word now stand before
    // the list, so every such walk ends there.
    file: 'src/libespeak-ng/phonemelist.c',
    find: '\tPHONEME_LIST ph_list3[N_PHONEME_LIST];\n',
    replace:
      '\tPHONEME_LIST ph_list3_guarded[N_PHONEME_LIST + 2]; /* voxmill: two word-start pauses before the list */\n' +
      '\tPHONEME_LIST *ph_list3 = ph_list3_guarded + 2;\n' +
      '\tmemset(ph_list3_guarded, 0, 2 * sizeof(PHONEME_LIST));\n' +
      '\tfor (int guard = 0; guard < 2; guard++) {\n' +
      '\t\tph_list3_guarded[guard].sourceix = 1;\n' +
      '\t\tph_list3_guarded[guard].phcode = phonPAUSE;\n' +
      '\t\tph_list3_guarded[guard].ph = phoneme_tab[phonPAUSE];\n' +
      '\t\tph_list3_guarded[guard].type = phoneme_tab[phonPAUSE]->type;\n' +
      '\t}\n',
  },
  {
    // An entry of that list can have no phoneme (a code past the phoneme table switched to in the middle of the
    // clause): counting vowels back to the word's start read through its null pointer.
    file: 'src/libespeak-ng/synthdata.c',
    find: '\t\tif (plist->ph->type == phVOWEL)\n\t\t\tcount++;\n',
    replace:
      '\t\tif (plist->ph != NULL && plist->ph->type == phVOWEL) /* voxmill: an entry may have no phoneme */\n\t\t\tcount++;\n',
  },
  {
    // The same entry as the phoneme a condition tests (prevPh, nextPh, ...): the condition is false.
    file: 'src/libespeak-ng/synthdata.c',
    find: '\t\tPHONEME_TAB *ph;\n\t\tph = plist->ph;\n',
    replace:
      '\t\tPHONEME_TAB *ph;\n\t\tph = plist->ph;\n\t\tif (ph == NULL) return false; /* voxmill: an entry may have no phoneme */\n',
  },
  {
    // Those walks also run over the finished list (phoneme_list, from its second entry, when the phonemes are
    // written out): counting vowels back to a word start went in front of the array.
    file: 'src/libespeak-ng/synthdata.c',
    find: '\t\tif (plist->sourceix != 0)\n\t\t\tbreak;\n\t\tplist--;\n',
    replace:
      '\t\tif (plist->sourceix != 0 || plist == phoneme_list) /* voxmill: not before the list */\n\t\t\tbreak;\n\t\tplist--;\n',
  },
  {
    file: 'src/libespeak-ng/synthdata.c',
    find: '\t\t\t\tdo {\n\t\t\t\t\tplist--;\n',
    replace:
      '\t\t\t\tdo {\n\t\t\t\t\tif (plist == phoneme_list) return false; /* voxmill: not before the list */\n\t\t\t\t\tplist--;\n',
  },
  {
    file: 'src/libespeak-ng/synthdata.c',
    find: '\t\t\tif ((plist[0].sourceix) || (plist[-1].sourceix))\n\t\t\t\treturn false;\n\t\t\tplist -= 2;\n',
    replace:
      '\t\t\tif ((plist[0].sourceix) || (plist[-1].sourceix) || plist == phoneme_list + 1) /* voxmill: not before the list */\n' +
      '\t\t\t\treturn false;\n\t\t\tplist -= 2;\n',
  },
  {
    // A rule's context that counts syllables or looks for vowels walks the word to its space, and from past the
    // clause's last word it walked on through the zeros after it and off the end of the clause's buffer (read past
    // TranslateClause's sbuf, Spanish text with an "etc"). Each such walk stops at the end of the text too.
    file: 'src/libespeak-ng/dictionary.c',
    find: '\t\t\t\t\twhile (letter_w != RULE_SPACE) {\n' + '\t\t\t\t\t\tif ((vowel == 0)',
    replace:
      '\t\t\t\t\twhile (letter_w != RULE_SPACE && letter_w != 0) { /* voxmill: not past the clause */\n' +
      '\t\t\t\t\t\tif ((vowel == 0)',
  },
  {
    file: 'src/libespeak-ng/dictionary.c',
    find:
      '\t\t\t\t\twhile (letter_w != RULE_SPACE) {\n' +
      '\t\t\t\t\t\tif (IsLetter(tr, letter_w, LETTERGP_VOWEL2)) {\n\t\t\t\t\t\t\tfailed = 1;\n\t\t\t\t\t\t\tbreak;\n\t\t\t\t\t\t}\n' +
      '\t\t\t\t\t\tp += utf8_in(',
    replace:
      '\t\t\t\t\twhile (letter_w != RULE_SPACE && letter_w != 0) { /* voxmill: not past the clause */\n' +
      '\t\t\t\t\t\tif (IsLetter(tr, letter_w, LETTERGP_VOWEL2)) {\n\t\t\t\t\t\t\tfailed = 1;\n\t\t\t\t\t\t\tbreak;\n\t\t\t\t\t\t}\n' +
      '\t\t\t\t\t\tp += utf8_in(',
  },
  {
    file: 'src/libespeak-ng/dictionary.c',
    find:
      '\t\t\t\t\twhile (letter_w != RULE_SPACE) {\n' +
      '\t\t\t\t\t\tif (IsLetter(tr, letter_w, LETTERGP_VOWEL2)) {\n\t\t\t\t\t\t\tfailed = 1;\n\t\t\t\t\t\t\tbreak;\n\t\t\t\t\t\t}\n' +
      '\t\t\t\t\t\tp -= utf8_in2(',
    replace:
      '\t\t\t\t\twhile (letter_w != RULE_SPACE && letter_w != 0) { /* voxmill: not past the clause */\n' +
      '\t\t\t\t\t\tif (IsLetter(tr, letter_w, LETTERGP_VOWEL2)) {\n\t\t\t\t\t\t\tfailed = 1;\n\t\t\t\t\t\t\tbreak;\n\t\t\t\t\t\t}\n' +
      '\t\t\t\t\t\tp -= utf8_in2(',
  },
  {
    // A long number is split into three-digit words in number_buf (150 bytes), written while under its last 20 bytes;
    // a step writes up to six, and then 16 bytes of the text after the number and a terminator follow: up to two bytes
    // past its end. 24 more bytes hold them; the two loops keep their old limit.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\tchar number_buf[150];\n',
    replace: '\t\tchar number_buf[150 + 24]; /* voxmill: the split number and 17 more bytes fit */\n',
  },
  {
    file: 'src/libespeak-ng/translate.c',
    find: '\t\t\twhile (pn < &number_buf[sizeof(number_buf)-20]) {\n\t\t\t\tif (iswdigit(*pw))',
    replace: '\t\t\twhile (pn < &number_buf[150-20]) {\n\t\t\t\tif (iswdigit(*pw))',
  },
  {
    file: 'src/libespeak-ng/translate.c',
    find: '\t\t\twhile (pn < &number_buf[sizeof(number_buf)-20]) {\n\t\t\t\tif (!IsDigit09(',
    replace: '\t\t\twhile (pn < &number_buf[150-20]) {\n\t\t\t\tif (!IsDigit09(',
  },
  {
    // Each part is then translated up to its space; when the 16 bytes copied after the number have none, the search
    // went on past their terminator to the end of number_buf (found by scripts/fuzz.sh: a long number among Hebrew
    // letters, read by the French voice). It stops at the terminator, which also ends the parts.
    file: 'src/libespeak-ng/translate.c',
    find: "\t\t\t\twhile (*pw++ != ' ')\n\t\t\t\t\t;\n\t\t\t\twords[ix].pre_pause = 0;\n",
    replace:
      "\t\t\t\twhile (*pw != 0 && *pw++ != ' ') /* voxmill: not past the copied text */\n\t\t\t\t\t;\n" +
      '\t\t\t\twords[ix].pre_pause = 0;\n\t\t\t\tif (*pw == 0)\n\t\t\t\t\tbreak;\n',
  },
  {
    // The clause's text starts two bytes into sbuf, and looking back from a word's end for a suffix's spelling
    // ("spong" before an "-ing" removed in English) read up to three bytes in front of it ("iing is scheduled").
    // Eight zero bytes now stand before sbuf, as sbuf[0] is. And 16 after it: a number near the clause's end is
    // split with the 16 bytes after it copied (memcpy(pn, pw, 16)), read past sbuf's end.
    file: 'src/libespeak-ng/translate.c',
    find: '\tchar sbuf[N_TR_SOURCE];\n',
    replace:
      '\tchar sbuf_guarded[8 + N_TR_SOURCE + 16] = { 0 }; /* voxmill: look-behinds and the number copy stay inside */\n' +
      '\tchar *sbuf = sbuf_guarded + 8;\n',
  },
  {
    file: 'src/libespeak-ng/translate.c',
    find: '(ix < (int)sizeof(sbuf) - 1)',
    replace: '(ix < N_TR_SOURCE - 1)',
  },
  {
    // A number's phonemes are appended without bounds: each further decimal point adds "point" and its digits, and
    // each leading zero of a French-style fraction adds "zero" ("9999999;999..." overflowed the word's 200 bytes of
    // phonemes in TranslateWord3). The two loops stop once the phonemes are far past a word's, and the number is
    // translated into room for that much, then cut to the word's buffer.
    file: 'src/libespeak-ng/numbers.c',
    find: '\twhile (decimal_point) {\n',
    replace: '\twhile (decimal_point && strlen(ph_out) < N_WORD_PHONEMES * 8) { /* voxmill: bounded */\n',
  },
  {
    file: 'src/libespeak-ng/numbers.c',
    find: "\t\t\twhile (word[n_digits] == '0') {\n",
    replace: "\t\t\twhile (word[n_digits] == '0' && strlen(ph_out) < N_WORD_PHONEMES * 8) { /* voxmill: bounded */\n",
  },
  {
    file: 'src/libespeak-ng/numbers.c',
    find: '\t\treturn TranslateNumber_1(tr, word1, ph_out, flags, wtab, control);\n',
    replace:
      '\t{\n' +
      '\t\t/* voxmill: into room for the loops above; what ph_out held is kept when nothing is written */\n' +
      '\t\tchar wide[N_WORD_PHONEMES * 16];\n' +
      '\t\tsize_t length = strnlen(ph_out, N_WORD_PHONEMES - 1);\n' +
      '\t\tmemcpy(wide, ph_out, length);\n' +
      '\t\twide[length] = 0;\n' +
      '\t\tint found = TranslateNumber_1(tr, word1, wide, flags, wtab, control);\n' +
      '\t\tlength = strnlen(wide, N_WORD_PHONEMES - 1);\n' +
      '\t\tmemcpy(ph_out, wide, length);\n' +
      '\t\tph_out[length] = 0;\n' +
      '\t\treturn found;\n' +
      '\t}\n',
  },
  {
    // A character's name is looked up into 60 bytes (55 for a special word), where the dictionary may write a whole
    // entry's phonemes (up to N_PHONEME_BYTES; a symbol's long name in one language overflowed it), and its mnemonics
    // were then written into 55 and 60 bytes. Each buffer now holds what may be written to it, and a name whose
    // mnemonics do not fit the 60 bytes the callers give is left unspoken.
    file: 'src/libespeak-ng/readclause.c',
    find: '\tchar phonemes[55];\n\tchar *string1',
    replace: '\tchar phonemes[N_WORD_PHONEMES]; /* voxmill: what LookupDictList may write */\n\tchar *string1',
  },
  {
    file: 'src/libespeak-ng/readclause.c',
    find: '\tchar phonemes[60];\n',
    replace: '\tchar phonemes[N_WORD_PHONEMES]; /* voxmill: what LookupDictList may write */\n',
  },
  {
    file: 'src/libespeak-ng/readclause.c',
    find: '\tchar ph_buf[30];\n',
    replace: '\tchar ph_buf[60]; /* voxmill: DecodeWithPhonemeMode writes up to 60 */\n',
  },
  {
    file: 'src/libespeak-ng/readclause.c',
    find:
      '\tchar phonemes2[55];\n\tif (tr2 == NULL) {\n\t\tSetWordStress(tr, phonemes, flags, -1, 0);\n' +
      '\t\tDecodePhonemes(phonemes, phonemes2);\n\t\tsprintf(buf, "[\\002%s]]", phonemes2);\n',
    replace:
      '\tchar phonemes2[4 * N_WORD_PHONEMES + 8]; /* voxmill: up to four mnemonic bytes a phoneme */\n' +
      '\tchar decoded[4 * N_WORD_PHONEMES + 40];\n' +
      '\tchar *const out = buf;\n' +
      '\tbuf = decoded;\n' +
      '\tif (tr2 == NULL) {\n\t\tSetWordStress(tr, phonemes, flags, -1, 0);\n' +
      '\t\tDecodePhonemes(phonemes, phonemes2);\n\t\tsprintf(buf, "[\\002%s]]", phonemes2);\n',
  },
  {
    file: 'src/libespeak-ng/readclause.c',
    find: '\t    sprintf(buf, "[\\002_^_%s %s _^_%s]]", ESPEAKNG_DEFAULT_VOICE, phonemes2, WordToString2(wbuf, tr->translator_name));\n    }\n}\n',
    replace:
      '\t    sprintf(buf, "[\\002_^_%s %s _^_%s]]", ESPEAKNG_DEFAULT_VOICE, phonemes2, WordToString2(wbuf, tr->translator_name));\n    }\n' +
      '\tif (strlen(decoded) < 60) /* voxmill: the callers give 60 bytes */\n\t\tstrcpy(out, decoded);\n\telse\n\t\tout[0] = 0;\n}\n',
  },
  {
    // A switch to another language's phonemes ("_^_" and a name, which the text can spell) copied the name, however
    // long, into 12 bytes. Longer names are cut there, and then name no phoneme table.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\tlang_name[ix++] = tolower(c1);\n',
    replace:
      '\t\tif (ix < (int)sizeof(lang_name) - 1) /* voxmill: the name is cut to the buffer */\n' +
      '\t\t\tlang_name[ix++] = tolower(c1);\n',
  },
  {
    // A word the dictionary replaces by text ("textmode") was copied whole into the caller's 159 bytes
    // (&word_replaced[2]): 257 bytes of Spanish text overflowed TranslateWord2's stack. It is cut there, at the start
    // of a character.
    file: 'src/libespeak-ng/translateword.c',
    find: '\t\t\t\tstrcpy(word_out, word1);\n',
    replace:
      '\t\t\t{ /* voxmill: word_out holds N_WORD_BYTES - 1 bytes; a longer text is cut at a character, then a space */\n' +
      '\t\t\t\tsize_t n = strlen(word1);\n' +
      '\t\t\t\tif (n > N_WORD_BYTES - 3) {\n' +
      '\t\t\t\t\tn = N_WORD_BYTES - 3;\n' +
      '\t\t\t\t\twhile (n > 0 && (word1[n] & 0xc0) == 0x80) n--;\n' +
      '\t\t\t\t\tmemcpy(word_out, word1, n);\n' +
      "\t\t\t\t\tword_out[n++] = ' ';\n" +
      '\t\t\t\t} else\n' +
      '\t\t\t\t\tmemcpy(word_out, word1, n);\n' +
      '\t\t\t\tword_out[n] = 0;\n' +
      '\t\t\t}\n',
  },
  {
    // The same bound on the alternative fraction form (one lookup a digit, Sinhala), which had none.
    file: 'src/libespeak-ng/numbers.c',
    find: '\t\t\twhile (decimal_count-- > 1) {\n',
    replace: '\t\t\twhile (decimal_count-- > 1 && strlen(ph_out) < N_WORD_PHONEMES * 8) { /* voxmill: bounded */\n',
  },
  {
    // "_cap" is looked up into 30 bytes where DecodeWithPhonemeMode writes up to 60 (capitals mode 2 only).
    file: 'src/libespeak-ng/readclause.c',
    find: '\t\t\t\tchar text_buf[30];\n',
    replace: '\t\t\t\tchar text_buf[60]; /* voxmill: DecodeWithPhonemeMode writes up to 60 */\n',
  },
  {
    // The words of a text replacement are then walked space to space; a replacement with no space after its last word
    // (cut above, found by CI's fuzzer after that cut) was walked past its end. The walk stops at the end too.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\t\t\twhile (!isspace(*word_out)) ++word_out;\n',
    replace: '\t\t\t\twhile (*word_out && !isspace(*word_out)) ++word_out; /* voxmill: not past the end */\n',
  },
  {
    // TranslateWord2 reads a word's phoneme codes from word_phonemes until a 0; a word that filled all 200 bytes had
    // none, and the read went on past the array (found by CI's fixed-seed fuzzer, 2026-11-28). It stops at the end.
    file: 'src/libespeak-ng/translate.c',
    find: '\twhile (((ph_code = *p++) != 0) && (n_ph_list2 < N_PHONEME_LIST-3-2)) {\n',
    replace:
      '\twhile ((p < (unsigned char *)word_phonemes + N_WORD_PHONEMES) && ((ph_code = *p++) != 0) && (n_ph_list2 < N_PHONEME_LIST-3-2)) { /* voxmill: not past the array */\n',
  },
  {
    // A word in phoneme mnemonics ([[...]] in the text) is encoded by EncodePhonemes, which writes one code per
    // mnemonic with no bound, into word_phonemes (200 bytes): an 880-byte text whose word of repeated mnemonics ran
    // long wrote past the array (found by CI's fixed-seed fuzzer, 2026-12-05, Arabic voice). EncodePhonemes writes at
    // most the word's length plus 2 bytes (each code consumes a byte of the word or more; a language switch adds a
    // separator; then the terminator), so it writes into room for the longest word a clause holds, and word_phonemes
    // takes what fits, as when EncodePhonemes stops at a mnemonic it does not know.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\t\tEncodePhonemes(word, word_phonemes, &bad_phoneme);\n',
    replace:
      '\t\t\t{ /* voxmill: encoded into room for the whole word, then cut to word_phonemes */\n' +
      '\t\t\t\tchar encoded[N_TR_SOURCE + 64];\n' +
      '\t\t\t\tconst char *end = word;\n' +
      '\t\t\t\twhile ((uint8_t)*end < 0x80 && isspace(*end)) end++;\n' +
      '\t\t\t\twhile (*end != 0 && !isspace((uint8_t)*end)) end++;\n' +
      '\t\t\t\tencoded[0] = 0;\n' +
      '\t\t\t\tif ((size_t)(end - word) + 2 < sizeof(encoded))\n' +
      '\t\t\t\t\tEncodePhonemes(word, encoded, &bad_phoneme);\n' +
      '\t\t\t\tsize_t n_encoded = strlen(encoded);\n' +
      '\t\t\t\tif (n_encoded > N_WORD_PHONEMES - 1) n_encoded = N_WORD_PHONEMES - 1;\n' +
      '\t\t\t\tmemcpy(word_phonemes, encoded, n_encoded);\n' +
      '\t\t\t\tword_phonemes[n_encoded] = 0;\n' +
      '\t\t\t}\n',
  },
  {
    // ReadClause writes a clause past N_TR_SOURCE into the source buffer's 40 bytes of slack (an embedded "B" command's
    // spaces, "_cap", a 4-byte character after the last check), and charix follows the same indices: a clause ending
    // there set charix_top to 801, and TranslateClause's charix[charix_top + 3] wrote past the array (found by CI's
    // fixed-seed fuzzer, 2026-12-02, and by -fork=2 here). charix gets the same slack.
    file: 'src/libespeak-ng/translate.c',
    find: '\tshort charix[N_TR_SOURCE+4];\n',
    replace: '\tshort charix[N_TR_SOURCE+40+4]; /* voxmill: the same slack as source[] */\n',
  },
  {
    // ...and the "B" command's list of punctuation to speak added a space per character with no bound (up to 59): they
    // stop at the clause's limit.
    file: 'src/libespeak-ng/readclause.c',
    find: "\t\t\t\t\t\t\tbuf[ix++] = ' ';\n",
    replace: "\t\t\t\t\t\t\tif (ix < n_buf - 4) buf[ix++] = ' '; /* voxmill: bounded */\n",
  },
  {
    // A phoneme code with no entry in the phoneme table in force (a language switched to in the middle of a clause)
    // reached the output list with a null phoneme (or, past n_phoneme_tab, one left from an earlier table), which later
    // passes read through (fuzzer, 2026-12-02): such an entry is dropped, as a phoneme replaced by nothing is.
    file: 'src/libespeak-ng/phonemelist.c',
    find: '\t\t// copy phoneme into the output list\n',
    replace:
      '\t\tif (plist2->phcode >= n_phoneme_tab || phoneme_tab[plist2->phcode] == NULL) { /* voxmill: not in this table */\n' +
      '\t\t\tdeleted_sourceix = plist2->sourceix; /* its word start passes to the next phoneme, as for a deletion */\n' +
      '\t\t\tcontinue;\n' +
      '\t\t}\n' +
      '\t\t// copy phoneme into the output list\n',
  },
  {
    // ...and a phoneme's rules may name a replacement, an insertion or a change of the next phoneme by a code the
    // table in force does not have: the rule is then not applied.
    file: 'src/libespeak-ng/phonemelist.c',
    find: '\t\tif ((alternative = phdata.pd_param[pd_CHANGE_NEXTPHONEME]) > 0) {\n',
    replace:
      '\t\tif ((alternative = phdata.pd_param[pd_CHANGE_NEXTPHONEME]) > 0 && alternative < n_phoneme_tab && phoneme_tab[alternative] != NULL) { /* voxmill */\n',
  },
  {
    file: 'src/libespeak-ng/phonemelist.c',
    find: '\t\tif (((alternative = phdata.pd_param[pd_INSERTPHONEME]) > 0) && (inserted == false)) {\n',
    replace:
      '\t\tif (((alternative = phdata.pd_param[pd_INSERTPHONEME]) > 0) && (inserted == false) && alternative < n_phoneme_tab && phoneme_tab[alternative] != NULL) { /* voxmill */\n',
  },
  {
    file: 'src/libespeak-ng/phonemelist.c',
    find: '\t\tif ((alternative = phdata.pd_param[pd_CHANGEPHONEME]) > 0) {\n',
    replace:
      '\t\tif ((alternative = phdata.pd_param[pd_CHANGEPHONEME]) > 0 && alternative < n_phoneme_tab && phoneme_tab[alternative] != NULL) { /* voxmill */\n',
  },
  {
    // With punctuation read aloud, a clause near its end (ReadClause stops a clause only past N_TR_SOURCE - 75 bytes,
    // and a word runs on to N_TR_SOURCE - 4) took a punctuation mark's name, up to 191 bytes, past the end of
    // translate.c's source[N_TR_SOURCE + 40]. The name is cut to what fits before N_TR_SOURCE - 4, on a character
    // boundary; such a clause ends there, as one that reaches the limit does.
    file: 'src/libespeak-ng/readclause.c',
    find: '\tbufix1 = *bufix;\n\tlen = strlen(buf);\n\tstrcpy(&output[*bufix], buf);\n',
    replace:
      '\tbufix1 = *bufix;\n\tlen = strlen(buf);\n' +
      '\tif (*bufix + len > N_TR_SOURCE - 4) { /* voxmill: never past the clause buffer */\n' +
      '\t\tlen = *bufix < N_TR_SOURCE - 4 ? N_TR_SOURCE - 4 - *bufix : 0;\n' +
      '\t\twhile (len > 0 && (buf[len] & 0xc0) == 0x80) len--;\n' +
      '\t\tbuf[len] = 0;\n' +
      '\t}\n' +
      '\tstrcpy(&output[*bufix], buf);\n',
  },
  {
    // An embedded B command (\001B0, \001B1: punctuation read aloud or not) put three spaces into the clause with no
    // bound and went on to the next character without the clause-length check: repeated, it wrote past source[].
    file: 'src/libespeak-ng/readclause.c',
    find: '\t\t\t\tstrcpy(&buf[ix], "   ");\n\t\t\t\tix += 3;\n',
    replace:
      '\t\t\t\tif (ix < n_buf - 4) { /* voxmill: bounded */\n' +
      '\t\t\t\t\tstrcpy(&buf[ix], "   ");\n\t\t\t\t\tix += 3;\n\t\t\t\t}\n',
  },
  {
    // A punctuation mark's spoken name (an ellipsis, in the voices whose *_list names it) is written at the clause's
    // end with no bound either: at most what is left before n_buf - 4.
    file: 'src/libespeak-ng/readclause.c',
    find: '\t\t\t\tsprintf(p2, "%s", LookupCharName(cn_buf, tr, c1, true));\n',
    replace:
      '\t\t\t\tsnprintf(p2, ix < n_buf - 4 ? n_buf - 4 - ix : 1, "%s", LookupCharName(cn_buf, tr, c1, true)); /* voxmill: bounded */\n',
  },
  {
    // A word replaced in text mode (an emoji's or a symbol's name) is translated from a copy on TranslateWord's stack
    // that starts two bytes before the word, and RemoveEnding compares the stem's last letters against exceptions up
    // to five letters long, reading in front of the copy when the stem is shorter (English, "...n.H" after an emoji).
    // The copy gets eight zero bytes in front, as TranslateClause's sbuf has, and eight behind: LookupDictList's check
    // for a dotted abbreviation reads two bytes past a word that fills the copy.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\tchar word[N_WORD_BYTES+1];\n\t\tword[0] = 0;\n',
    replace:
      '\t\tchar word_guarded[8 + N_WORD_BYTES+1 + 8] = { 0 }; /* voxmill: look-behinds and look-aheads stay inside */\n' +
      '\t\tchar *word = word_guarded + 8;\n\t\tword[0] = 0;\n',
  },
  {
    // The plural suffixes are translated from three-letter words (" zz", " iz", " ss") on addPluralSuffixes' stack,
    // and a rule's pre-context walks back from the word until a zero byte, which these did not have before their
    // space: it walked into the stack in front of them (English text). Each now starts with a zero byte.
    file: 'src/libespeak-ng/translateword.c',
    find: "\tchar word_zz[4] = { ' ', 'z', 'z', 0 };\n\tchar word_iz[4] = { ' ', 'i', 'z', 0 };\n\tchar word_ss[4] = { ' ', 's', 's', 0 };\n",
    replace:
      "\tchar word_zz[5] = { 0, ' ', 'z', 'z', 0 }; /* voxmill: a zero byte before the word */\n" +
      "\tchar word_iz[5] = { 0, ' ', 'i', 'z', 0 };\n\tchar word_ss[5] = { 0, ' ', 's', 's', 0 };\n",
  },
  { file: 'src/libespeak-ng/translateword.c', find: '&word_ss[1]', replace: '&word_ss[2]' },
  { file: 'src/libespeak-ng/translateword.c', find: '&word_zz[1]', replace: '&word_zz[2]' },
  { file: 'src/libespeak-ng/translateword.c', find: '&word_iz[1]', replace: '&word_iz[2]' },
  {
    // A phoneme table switch in a word's phonemes (phonSWITCH) is followed by a table number, which SelectPhonemeTable
    // used as an index into phoneme_tab_list (150 entries) unchecked. A word in phoneme mnemonics can spell the switch
    // ("_^_") after its first phoneme, where what follows is the language's name, not a number: the byte 0xC3 of a
    // UTF-8 name indexed entry 195 (found by CI's fixed-seed fuzzer, 2026-12-05, English voice). A number that names no
    // loaded table now leaves the current table in place.
    file: 'src/libespeak-ng/synthdata.c',
    find: '\tif (current_phoneme_table == number) return;\n',
    replace:
      '\tif (number < 0 || number >= n_phoneme_tables) return; /* voxmill: only a loaded table */\n' +
      '\tif (current_phoneme_table == number) return;\n',
  },
  {
    // The same number names the switch when phonemes are written out as mnemonics.
    file: 'src/libespeak-ng/dictionary.c',
    find: '\t\tp = phoneme_tab_list[plist->tone_ph].name;\n',
    replace:
      '\t\tp = plist->tone_ph < N_PHONEME_TABS ? phoneme_tab_list[plist->tone_ph].name : ""; /* voxmill: in the array */\n',
  },
  {
    // At the source of that number: TranslateWord2 keeps a switch in the clause's phoneme list with the byte after it
    // as its table (tone_ph), which later passes also read as a phoneme code (a syllable's tone), and it read that byte
    // even past word_phonemes' end, or a terminator (skipping it). A switch whose byte names no loaded table (past the
    // array, an empty entry, the terminator, the end of the buffer) is dropped with that byte, as an unknown phoneme is
    // (found by review of the fix above). A number naming a table is kept as before.
    file: 'src/libespeak-ng/translate.c',
    find: '\t\tif (ph_code == phonSWITCH) {\n\t\t\tph_list2[n_ph_list2].phcode = ph_code;\n',
    replace:
      '\t\tif (ph_code == phonSWITCH) {\n' +
      '\t\t\tif (p >= (unsigned char *)word_phonemes + N_WORD_PHONEMES || *p == 0 || *p >= N_PHONEME_TABS ||\n' +
      '\t\t\t    phoneme_tab_list[*p].name[0] == 0) { /* voxmill: only a loaded table */\n' +
      '\t\t\t\tif (p < (unsigned char *)word_phonemes + N_WORD_PHONEMES && *p != 0)\n' +
      '\t\t\t\t\tp++;\n' +
      '\t\t\t\tcontinue;\n' +
      '\t\t\t}\n' +
      '\t\t\tph_list2[n_ph_list2].phcode = ph_code;\n',
  },
];
/** Bumped with every change to ESPEAK_FIXES, so a cached tree with older fixes is unpacked again. */
const ESPEAK_FIXES_VERSION = 22;

/** The unpacked espeak-ng tree with ESPEAK_FIXES applied. */
async function fixedEspeak() {
  const dir = await unpacked('espeak-ng', PINNED.espeakSource, 'espeak-ng-1.52.0+dfsg', ESPEAK_FIXES_VERSION);
  const stamp = join(dir, '.voxmill-fixes');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === String(ESPEAK_FIXES_VERSION)) return dir;
  for (const fix of ESPEAK_FIXES) {
    const path = join(dir, fix.file);
    const text = readFileSync(path, 'utf8');
    const at = text.indexOf(fix.find);
    if (at < 0 || text.indexOf(fix.find, at + 1) >= 0) {
      throw new Error(`espeak-ng fix for ${fix.file} does not apply: ${JSON.stringify(fix.find)} is not there once`);
    }
    // A function, so that "$&" or "$'" in a replacement is never read as a pattern.
    writeFileSync(
      path,
      text.replace(fix.find, () => fix.replace),
    );
  }
  writeFileSync(stamp, `${ESPEAK_FIXES_VERSION}\n`);
  return dir;
}

/** Where each dependency is, for `arch` (x64 or arm64), fetched when missing; environment overrides win. */
export async function nativeDeps(arch = process.arch) {
  if (!['x64', 'arm64'].includes(arch)) throw new Error(`no ONNX Runtime library is pinned for linux-${arch}`);
  const env = process.env;
  const deps = {
    VOXMILL_ORT_INCLUDE_DIR:
      env.VOXMILL_ORT_INCLUDE_DIR ||
      (await unpacked('onnxruntime-headers', PINNED.ortHeaders, 'usr/include/onnxruntime')),
    VOXMILL_ORT_LIBRARY:
      env.VOXMILL_ORT_LIBRARY ||
      join(
        await unpacked(`onnxruntime-${arch}`, PINNED.ortLibrary[arch], 'onnxruntime/capi'),
        'libonnxruntime.so.1.32.0',
      ),
    VOXMILL_ESPEAK_DIR: env.VOXMILL_ESPEAK_DIR || (await fixedEspeak()),
    VOXMILL_ESPEAK_DATA_DIR:
      env.VOXMILL_ESPEAK_DATA_DIR || (await unpacked('piper-phonemize', PINNED.espeakData, 'package/espeak-ng-data')),
  };
  for (const [name, path] of Object.entries(deps)) {
    if (!existsSync(path)) throw new Error(`${name}=${path} does not exist`);
  }
  return deps;
}

/** The wheel's licence file, with OpenBLAS's, LAPACK's, libgfortran's and libquadmath's notices. */
export const OPENBLAS_LICENCE_MEMBER = `scipy_openblas32-${PINNED.openblas.version}.dist-info/licenses/LICENSE.txt`;

/**
 * scipy-openblas32's package folder for `arch` (x64 or arm64), fetched and unpacked when missing, or
 * VOXMILL_OPENBLAS_DIR: a folder with include/cblas.h (scipy_-prefixed declarations) and lib/libscipy_openblas.so.
 */
export async function bundledOpenblas(arch = process.arch) {
  const pinned = PINNED.openblas[arch];
  if (!pinned) throw new Error(`no OpenBLAS is pinned for linux-${arch}`);
  const dir =
    process.env.VOXMILL_OPENBLAS_DIR || (await unpacked(`scipy-openblas32-${arch}`, pinned, 'scipy_openblas32'));
  for (const file of ['include/cblas.h', 'lib/libscipy_openblas.so']) {
    if (!existsSync(join(dir, file))) throw new Error(`VOXMILL_OPENBLAS_DIR=${dir} has no ${file}`);
  }
  return dir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const archAt = process.argv.indexOf('--arch');
  const arch = archAt > 0 ? process.argv[archAt + 1] : process.arch;
  try {
    const deps = await nativeDeps(arch);
    for (const [name, path] of Object.entries(deps)) console.log(`-D${name}=${path}`);
  } catch (error) {
    console.error(`voxmill: native dependencies: ${error.message}`);
    process.exit(1);
  }
}
