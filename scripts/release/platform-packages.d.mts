// Types for scripts/release/platform-packages.mjs, as the unit tests import it.
import type { BinaryMachine } from './binary-inspect.mjs';

export type Target = 'linux-x64' | 'linux-arm64' | 'darwin-arm64' | 'darwin-x64' | 'win32-x64';
export interface TargetSpec extends BinaryMachine {
  os: string;
  cpu: string;
  /** npm's libc field (Linux only). */
  libc: string | null;
  /** The package name's suffix after the target (gnu), or none. */
  suffix: string | null;
  /** The architecture of the pinned ONNX Runtime library (PINNED.ortLibrary), or null when none is pinned. */
  ort: string | null;
  /** Why the target cannot be assembled yet, when it cannot. */
  pending?: string;
}
/** A target's CPU variants of the addon: their build folders' Release/, by VOXMILL_CPU ('x86-64-v2'). */
export type VariantBuilds = Record<string, string>;
export interface RefusalOptions {
  allowNative?: boolean;
  allowSystemLibraries?: boolean;
  allowNewerGlibc?: boolean;
  /** Packs a target without the CPU variants CPU_VARIANTS lists for it. */
  allowSingleVariant?: boolean;
}
export const TARGETS: Record<Target, TargetSpec>;
/** The CPU variants (VOXMILL_CPU) each target's package must carry beside voxmill.node. */
export const CPU_VARIANTS: Partial<Record<Target, string[]>>;
/** `voxmill-<cpu>.node`. */
export function variantFile(cpu: string): string;
/** Whether the build folder above `releaseDir` was configured with zig's clang (VOXMILL_ZIG:BOOL=ON). */
export function zigBuilt(releaseDir: string): boolean;
/** `@voxmill/<target>[-<suffix>]`. */
export function packageName(target: Target): string;
/** Why the addon in `releaseDir` (with its CPU variants) cannot be packed for `target`; null when it can. */
export function refusal(
  target: Target,
  releaseDir: string,
  options?: RefusalOptions & { variants?: VariantBuilds },
): string | null;
/** The pinned zig wheel of a machine (default this one), thrown when none is pinned for it. */
export function zigWheel(arch?: string): { file: string; sha256: string; licence: string; url: () => string };
/** What a package holds of its build folders: [from, name in the package] copies, and package.json's `files`. */
export function packageContents(
  releaseDir: string,
  variants?: VariantBuilds,
): { copies: Array<[string, string]>; files: string[] };
export function tarballMember(tarball: string, member: string): string | undefined;
/** How two manifests differ, field by field (an object field entry by entry): `field: <a's> vs <b's>` lines. */
export function manifestDifferences(a: Record<string, unknown>, b: Record<string, unknown>): string[];
/**
 * What disagrees among a release's manifests (versions; each voxmill's @voxmill/* optional dependencies against the
 * platform packages among them; voxmill manifests that differ; os/cpu/libc), `sources` naming each (its tarball).
 */
export function releaseDisagreements(manifests: Array<Record<string, unknown>>, sources?: string[]): string[];
/** A platform package as --voxmill-for reads it: its tarball, its package.json, its voxmill.json (if any). */
export interface PlatformPackage {
  source: string;
  manifest: Record<string, unknown>;
  record?: { target?: string } & Record<string, unknown>;
}
/** voxmill's optional dependencies on these platform packages at `version`, by name; thrown, naming each problem. */
export function platformListing(packages: PlatformPackage[], version: string): Record<string, string>;
/** The manifest voxmill publishes: `optionalDependencies` added, prepare/prepack removed; thrown on a bad range. */
export function publishedManifest(
  manifest: Record<string, unknown>,
  optionalDependencies: Record<string, string>,
): Record<string, unknown>;
/** --voxmill-for: packs voxmill alone into `out`, listing the platform packages in `paths`; its tarball's path. */
export function voxmillFor(paths: string[], options: { out: string }): string;
export function checkRelease(paths: string[], options?: { required?: string[] }): Array<Record<string, unknown>>;
export function assemble(
  options: {
    targets: Partial<Record<Target, string>>;
    variants?: Partial<Record<Target, VariantBuilds>>;
    out: string;
  } & RefusalOptions,
): Promise<string[]>;
