import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
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
  // Without colours (pino-pretty colours a terminal's lines), so that the words can be matched.
  // eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC.
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk.replace(/\u001b\[\d+m/g, '')))
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
    const [, address] = await seen(/\] INFO: ready \{"address":"(http:\/\/127\.0\.0\.1:\d+)"/)
    assert.match(output, new RegExp(`"docs":"${address}/docs"`))
    assert.match(output, new RegExp(`"data":"SQLite file ${join(dir, 'data', 'listings.db')}"`))
    assert.match(output, /lst_[A-Za-z0-9_-]{43}/, 'the demo token is printed')
    await fetch(`${address}/api/v1/listing`)
    // One line per request, in words; its fields are not repeated after it.
    const [requestLine] = await seen(/\] INFO: GET \/api\/v1\/listing → 401 in [\d.]+ ms.*/)
    assert.doesNotMatch(requestLine, /"(method|route|status|durationMs|requestId)"/)
    for (const line of output.split(/\r?\n/)) assert.ok(!line.trimStart().startsWith('{'), `a JSON line on a terminal: ${line}`)
  } finally {
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
})

test('terminal lines are written as they are logged: a process killed at once has written every line (design record 8)', async () => {
  // The destination a terminal gets, here on a pipe; SIGKILL leaves no time for anything buffered.
  const script = [
    "import { pino } from 'pino'",
    `import { logDestination } from ${JSON.stringify(new URL('../src/log-output.ts', import.meta.url).pathname)}`,
    'const log = pino({}, logDestination({ isTTY: true }))',
    "for (let i = 0; i < 3; i++) log.info({ i }, 'line')",
    "process.kill(process.pid, 'SIGKILL')",
  ].join('\n')
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const signal = await new Promise((resolve) => child.once('close', (_code, signal) => resolve(signal)))
  assert.equal(signal, 'SIGKILL')
  assert.equal(output.match(/INFO: line/g)?.length, 3, output)
})
