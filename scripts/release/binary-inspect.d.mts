// Types for scripts/release/binary-inspect.mjs, as the unit tests import it.
export type BinaryFormat = 'elf' | 'macho' | 'pe';
export interface BinaryMachine {
  format: BinaryFormat;
  /** ELF e_machine, Mach-O cputype or PE Machine. */
  machine: number;
}
export interface VersionNeeds {
  /** The highest version needed ("2.35", "3.4.29"), or 'none'. */
  highest: string;
  /** The undefined symbols bound to that version. */
  symbols: string[];
}
/** What an ELF file needs of glibc (GLIBC_ versions). */
export type GlibcNeeds = VersionNeeds;
/** The highest GLIBC_ symbol version a Linux package's addon and ONNX Runtime library may need. */
export const GLIBC_CEILING: string;
/** The highest GLIBCXX_ (libstdc++) symbol version they may need: gcc 8's. */
export const GLIBCXX_CEILING: string;
/** "ELF machine 0x3e, x86-64". */
export function describeMachine(found: BinaryMachine): string;
/** The binary format and machine of a shared object, from its header, or a reason it is none this script packs. */
export function binaryMachine(bytes: Buffer): BinaryMachine | string;
export function machoLibraries(bytes: Buffer): string[];
export function peLibraries(bytes: Buffer): string[];
/** The libraries an ELF file loads from its own folder (a bundled OpenBLAS), and theirs in turn. */
export function besideLibraries(file: string, dir?: string): string[];
export function neededLibraries(file: string, bytes?: Buffer): string[];
export function foreignLibraries(format: BinaryFormat, names: string[]): string[];
/** Negative, 0 or positive, comparing dotted versions number by number. */
export function compareVersions(a: string, b: string): number;
/** The highest `<prefix>_` version readelf's text shows needed, and the symbols bound to it. */
export function parseVersionNeeds(readelfText: string, prefix: 'GLIBC' | 'GLIBCXX'): VersionNeeds;
export function parseGlibcNeeds(readelfText: string): GlibcNeeds;
export function parseGlibcxxNeeds(readelfText: string): VersionNeeds;
/** What an ELF file needs of glibc and libstdc++, from one run of readelf. */
export function libcNeeds(file: string): { glibc: GlibcNeeds; glibcxx: VersionNeeds };
export function glibcNeeds(file: string): GlibcNeeds;
export function highestGlibc(file: string): string;
/** Why these needs are above the ceiling; null when they are not. */
export function glibcAboveCeiling(needs: GlibcNeeds, ceiling?: string): string | null;
/** Why these libstdc++ needs are above the ceiling; null when they are not. */
export function glibcxxAboveCeiling(needs: VersionNeeds, ceiling?: string): string | null;
