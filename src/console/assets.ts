import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The console's built files (console/build.ts writes them to dist/console/assets with fingerprinted names, their
 * .br and .gz, and a manifest). This module is two folders below the repository root both as source (src/console)
 * and as built (dist/console), so one relative path finds them either way.
 */
export const ASSETS_DIR = fileURLToPath(new URL('../../dist/console/assets/', import.meta.url))

export interface Manifest {
  /** The entry script and style sheet, by their fingerprinted names. */
  script: string
  style: string
  files: string[]
}

/** The build's manifest; none (console not built) gives a page without a script, not a failed start. */
export function readManifest(dir = ASSETS_DIR): Manifest | undefined {
  try {
    return JSON.parse(readFileSync(`${dir}manifest.json`, 'utf8')) as Manifest
  } catch {
    return undefined
  }
}
