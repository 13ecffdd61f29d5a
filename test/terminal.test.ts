import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { readable } from '../src/log-output.js'
import { CLI, cleanEnv } from './process.js'

// Issue 16 part 5: a newcomer who runs `npm start` in a terminal reads lines, not JSON, and is told where the data
// lives and where the docs are. Piped, the service keeps writing JSON (the other process tests read it).

test('on a terminal: readable lines, the docs URL and where the data lives; requests as one line each', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-terminal-'))
  // util-linux's `script` gives the service a pseudo-terminal, as a shell would: stdout.isTTY is true there.
  const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} serve`, '/dev/null'], {
    cwd: dir,
    env: cleanEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const seen = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const started = Date.now()
      const poll = () => {
        const match = pattern.exec(output)
        if (match) resolve(match)
        else if (Date.now() - started > timeoutMs) reject(new Error(`not seen: ${pattern}\n${output}`))
        else setTimeout(poll, 50)
      }
      poll()
    })
  try {
    const [, address] = await seen(/ready {2}address=(http:\/\/127\.0\.0\.1:\d+) /)
    assert.match(output, new RegExp(`docs=${address}/docs`))
    assert.match(output, new RegExp(`data=SQLite file ${join(dir, 'data', 'listings.db')}`))
    assert.match(output, /lst_[A-Za-z0-9_-]{43}/, 'the demo token is printed')
    await fetch(`${address}/api/v1/listing`)
    await seen(/INFO {2}GET \/api\/v1\/listing → 401 in [\d.]+ ms/)
    for (const line of output.split(/\r?\n/)) assert.ok(!line.trimStart().startsWith('{'), `a JSON line on a terminal: ${line}`)
  } finally {
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a log line for people: time, level, message, the rest as key=value; the error’s message; not JSON is left alone', () => {
  const line = readable(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 10, 23, 9, 5, 7),
      pid: 1,
      hostname: 'h',
      msg: 'database unavailable',
      requestId: 'r',
      err: { message: 'connect ECONNREFUSED' },
      job: 'expiries',
    }),
  )
  assert.match(line, /^\d\d:\d\d:\d\d WARN {2}database unavailable {2}job=expiries error="connect ECONNREFUSED"\n$/)
  const request = readable(
    JSON.stringify({
      level: 30,
      time: 0,
      msg: 'request',
      method: 'PATCH',
      route: '/api/v1/listing/:listingId',
      status: 412,
      durationMs: 3.25,
      providerId: 'prv_1',
    }),
  )
  assert.match(request, /INFO {2}PATCH \/api\/v1\/listing\/:listingId → 412 in 3.25 ms {2}providerId=prv_1\n$/)
  assert.equal(readable('not json\n'), 'not json\n')
})
