import type { Script, ScriptSql } from '../db/script.js'
import { expireDue, patchListing, withdrawListing } from '../listings/change-scripts.js'
import { pruneEvents } from '../events/retention.js'
import { createListing } from '../listings/create-script.js'
import { claimDeliveries, recordAttempts } from '../webhooks/delivery-scripts.js'
import { createEndpoint, deleteEndpoint, enableEndpoint, rotateSecret } from '../webhooks/endpoint-scripts.js'

/**
 * Every write script the service runs (db/script.ts), by name: the SQLite writer thread receives a name and its
 * arguments, not a function, and looks the script up here. Loaded by that thread: no Kysely, no pg.
 */
export const writeScripts = {
  createListing,
  patchListing,
  withdrawListing,
  expireDue,
  pruneEvents,
  createEndpoint,
  deleteEndpoint,
  rotateSecret,
  enableEndpoint,
  claimDeliveries,
  recordAttempts,
} satisfies Record<string, (d: ScriptSql, args: never) => Script<unknown>>

export type WriteScripts = typeof writeScripts
export type ScriptName = keyof WriteScripts
export type ScriptArgs<N extends ScriptName> = Parameters<WriteScripts[N]>[1]
export type ScriptResult<N extends ScriptName> = ReturnType<WriteScripts[N]> extends Script<infer T> ? T : never

/** One script to run, as it crosses to the writer thread. */
export interface ScriptJob {
  name: ScriptName
  args: unknown
}

/** Starts the named script: the registry's functions take different arguments, checked where jobs are made. */
export function startScript(sql: ScriptSql, job: ScriptJob): Script<unknown> {
  return (writeScripts[job.name] as (d: ScriptSql, args: unknown) => Script<unknown>)(sql, job.args)
}
