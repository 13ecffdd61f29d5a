import { pino, type DestinationStream } from 'pino'

/** JSON, written synchronously; on a terminal, the same lines made readable (a TTY write is synchronous in Node). */
export function logDestination(stdout: NodeJS.WriteStream = process.stdout): DestinationStream {
  if (!stdout.isTTY) return pino.destination({ dest: 1, sync: true })
  return { write: (line: string) => void stdout.write(readable(line)) }
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' }
/** Fields shown in their places or not at all. */
const PLACED = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'requestId', 'method', 'route', 'status', 'durationMs', 'err'])

function text(value: unknown): string {
  if (typeof value === 'string') return value
  return value === undefined ? '' : JSON.stringify(value)
}

/** One pino JSON line for people: time, level, message, then the other fields as key=value. */
export function readable(line: string): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line
  }
  const time = new Date(Number(entry.time)).toTimeString().slice(0, 8)
  const level = LEVELS[Number(entry.level)] ?? String(entry.level)
  const message =
    entry.msg === 'request' || entry.msg === 'request failed'
      ? `${text(entry.method)} ${text(entry.route ?? '(no route)')} → ${text(entry.status)} in ${text(entry.durationMs)} ms`
      : text(entry.msg ?? '')
  const fields = Object.entries(entry)
    .filter(([key, value]) => !PLACED.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${text(value)}`)
  const error = entry.err as { message?: string } | undefined
  if (error?.message) fields.push(`error="${error.message}"`)
  return `${time} ${level} ${message}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}\n`
}
