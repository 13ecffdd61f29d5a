import { pino, type DestinationStream } from 'pino'
import pretty from 'pino-pretty'

/** Left out of a terminal's lines: a request line says the rest in words. */
const REQUEST_FIELDS = 'requestId,method,route,status,durationMs'

/**
 * JSON lines, written synchronously; on a terminal, the same lines made readable by pino-pretty, also written
 * synchronously (`sync`), each request as one line: method, route, status and time.
 */
export function logDestination(stdout: NodeJS.WriteStream = process.stdout): DestinationStream {
  if (!stdout.isTTY) return pino.destination({ dest: 1, sync: true })
  return pretty({
    sync: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: `pid,hostname,${REQUEST_FIELDS}`,
    singleLine: true,
    messageFormat: (log, messageKey) => {
      const { method, route = '(no route)', status, durationMs, [messageKey]: message = '' } = log as Record<string, string | number | undefined>
      return method === undefined ? String(message) : `${method} ${route} → ${status} in ${durationMs} ms`
    },
  })
}
