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
//   VOXMILL_ORT_INCLUDE_DIR, VOXMILL_ORT_LIBRARY, VOXMILL_ESPEAK_DIR, VOXMILL_ESPEAK_DATA_DIR
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
  espeakData: {
    file: 'piper-phonemize-1.4.11.tgz',
    npm: 'piper-phonemize@1.4.11',
    sha256: '4a31ed18b6b5d25f3387e93d672b3bd6d7748a3d67ee9fb1e9e15791496d1db9',
    licence: 'GPL-3.0-or-later (espeak-ng data), MIT (piper-phonemize)',
  },
};

function cacheDir() {
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
async function fetched(dep) {
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
function unpack(archive, into) {
  mkdirSync(into, { recursive: true });
  const result = spawnSync('cmake', ['-E', 'tar', 'xf', archive], { cwd: into, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`cannot unpack ${archive}: ${(result.stderr || '').trim()}`);
}

/**
 * The unpacked dependency: `<cache>/<name>/`, made once from the pinned file. `keep` is the folder inside the
 * archive that is kept (a .deb's data.tar.xz is unpacked first).
 */
async function unpacked(name, dep, keep, edition = 0) {
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
];
/** Bumped with every change to ESPEAK_FIXES, so a cached tree with older fixes is unpacked again. */
const ESPEAK_FIXES_VERSION = 5;

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
    writeFileSync(path, text.replace(fix.find, fix.replace));
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
