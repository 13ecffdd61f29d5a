import { readFileSync } from 'node:fs'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'

/**
 * The console's built files (console/build.ts writes them to dist/console/assets with fingerprinted names and a
 * manifest). This module is two folders below the repository root both as source (src/console) and as built
 * (dist/console), so one relative path finds them either way.
 */
export const ASSETS_DIR = fileURLToPath(new URL('../../dist/console/assets/', import.meta.url))

export interface Manifest {
  /** The entry script and style sheet, by their fingerprinted names. */
  script: string
  style: string
  files: string[]
}

export interface Asset {
  type: string
  identity: Buffer
  br: Buffer
  gzip: Buffer
}

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  map: 'application/json',
}

export interface ConsoleAssets {
  manifest: Manifest | undefined
  files: Map<string, Asset>
}

/**
 * Reads every built file once and compresses it once, at the best ratio: the files are small and never change
 * while the process runs. No manifest (console not built) gives a page without a script, not a failed start.
 */
export function loadAssets(dir = ASSETS_DIR): ConsoleAssets {
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(`${dir}manifest.json`, 'utf8')) as Manifest
  } catch {
    return { manifest: undefined, files: new Map() }
  }
  const files = new Map<string, Asset>()
  for (const name of manifest.files) {
    const identity = readFileSync(`${dir}${name}`)
    files.set(name, {
      type: TYPES[name.split('.').pop() ?? ''] ?? 'application/octet-stream',
      identity,
      br: brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
      gzip: gzipSync(identity, { level: 9 }),
    })
  }
  return { manifest, files }
}
