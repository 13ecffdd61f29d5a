import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'
import { killAll, run, runCli, startServer, TOKEN_SHAPE, cleanEnv, type Finished } from './process.js'

/** docs/operations.md#commands: the CLI, run as a real process (`node dist/cli/main.js …`) on a real database. */

after(killAll)

/** Parses the one JSON line a successful command prints on stdout. */
function printed(result: Finished): any {
  assert.equal(result.code, 0, `exit ${result.code}; stderr: ${result.stderr}`)
  assert.equal(result.stderr, '', 'a successful command writes nothing on stderr')
  assert.match(result.stdout, /^[^\n]+\n$/, 'stdout is exactly one line')
  return JSON.parse(result.stdout)
}

function assertUsageError(result: Finished): void {
  assert.equal(result.code, 2, `exit ${result.code}; stderr: ${result.stderr}`)
  assert.equal(result.stdout, '', 'nothing on stdout')
  assert.match(result.stderr, /Usage:/, 'help on stderr')
}

function assertCommandError(result: Finished): void {
  assert.equal(result.code, 1, `exit ${result.code}; stderr: ${result.stderr}`)
  assert.equal(result.stdout, '', 'nothing on stdout')
  assert.notEqual(result.stderr, '', 'says why on stderr')
}

const badUsage: Array<[title: string, args: string[]]> = [
  ['no arguments', []],
  ['an unknown command', ['frobnicate']],
  ['an unknown sub-command', ['provider', 'delete']],
  ['provider create without --name', ['provider', 'create']],
  ['provider create --name with an unknown flag', ['provider', 'create', '--name', 'X', '--colour', 'red']],
  ['token revoke with no id', ['token', 'revoke']],
  ['token revoke with two ids', ['token', 'revoke', 'a', 'b']],
  ['marketplace create without --name', ['marketplace', 'create']],
  ['marketplace create with an empty --name', ['marketplace', 'create', '--name', ' ']],
  ['marketplace create with --industry', ['marketplace', 'create', '--name', 'X', '--industry', 'bakery']],
]

for (const dialect of await testDialects()) {
  describe(`cli [${dialect}]`, { concurrency: 4 }, () => {
    let database: TestDatabase
    const cli = (...args: string[]) => runCli(args, { DATABASE_URL: database.url, LOG_LEVEL: 'silent' })

    before(async () => {
      database = await createTestDatabase(dialect)
    })
    after(async () => {
      await killAll()
      await database?.drop()
    })

    test('provider create prints {id,name,industry,tokenId,token} and exits 0', async () => {
      const out = printed(await cli('provider', 'create', '--name', 'X', '--industry', 'bakery'))
      assert.deepEqual(Object.keys(out).sort(), ['id', 'industry', 'name', 'token', 'tokenId'])
      assert.equal(out.name, 'X')
      assert.equal(out.industry, 'bakery')
      assert.match(out.id, /^prv_/)
      assert.match(out.tokenId, /^tok_/)
      assert.match(out.token, TOKEN_SHAPE)
    })

    test('provider create: industry defaults to restaurant', async () => {
      const out = printed(await cli('provider', 'create', '--name', 'Default Industry'))
      assert.equal(out.industry, 'restaurant')
      assert.equal(out.name, 'Default Industry')
    })

    test('provider list prints [{id,name,industry,createdAt}] and never a token or its hash', async () => {
      const created = printed(await cli('provider', 'create', '--name', 'Listed', '--industry', 'grocery'))
      const result = await cli('provider', 'list')
      const providers = printed(result)
      assert.ok(Array.isArray(providers))
      for (const provider of providers) {
        assert.deepEqual(Object.keys(provider).sort(), ['createdAt', 'id', 'industry', 'name'])
        assert.equal(new Date(provider.createdAt).toISOString(), provider.createdAt)
      }
      const mine = providers.find((p: { id: string }) => p.id === created.id)
      assert.deepEqual({ id: mine?.id, name: mine?.name, industry: mine?.industry }, { id: created.id, name: 'Listed', industry: 'grocery' })
      assert.ok(!result.stdout.includes(created.token), 'the token is not printed')
      assert.ok(!result.stdout.includes('lst_'), 'no token of any provider is printed')
      assert.ok(!result.stdout.includes(createHash('sha256').update(created.token).digest('hex')), 'no token hash')
      assert.doesNotMatch(result.stdout, /hash|token/i)
    })

    test('token create --provider prints {id,providerId,token}', async () => {
      const provider = printed(await cli('provider', 'create', '--name', 'Second Key'))
      const out = printed(await cli('token', 'create', '--provider', provider.id))
      assert.deepEqual(Object.keys(out).sort(), ['id', 'providerId', 'token'])
      assert.equal(out.providerId, provider.id)
      assert.match(out.id, /^tok_/)
      assert.notEqual(out.id, provider.tokenId)
      assert.match(out.token, TOKEN_SHAPE)
      assert.notEqual(out.token, provider.token)
    })

    test('token revoke prints {"id":…,"revoked":true}', async () => {
      const provider = printed(await cli('provider', 'create', '--name', 'Revoker'))
      const out = printed(await cli('token', 'revoke', provider.tokenId))
      assert.deepEqual(out, { id: provider.tokenId, revoked: true })
    })

    test('migrate prints {"migrated":true} and is idempotent', async () => {
      assert.deepEqual(printed(await cli('migrate')), { migrated: true })
      assert.deepEqual(printed(await cli('migrate')), { migrated: true })
    })

    test('a CLI token authenticates against the server on the same database; a revoked one gets 401', async () => {
      const provider = printed(await cli('provider', 'create', '--name', 'Served', '--industry', 'bakery'))
      const second = printed(await cli('token', 'create', '--provider', provider.id))
      const server = await startServer({ DATABASE_URL: database.url })
      try {
        const list = (token: string) => fetch(`${server.baseUrl}/api/v1/listing`, { headers: { authorization: `Bearer ${token}` } })
        const first = await list(provider.token)
        assert.equal(first.status, 200)
        assert.deepEqual(await first.json(), { recordCount: 0, content: [] })
        assert.equal((await list(second.token)).status, 200)

        printed(await cli('token', 'revoke', provider.tokenId))
        // docs/api.md#authentication: refused within 5 seconds.
        const deadline = Date.now() + 5000
        let status = (await list(provider.token)).status
        while (status !== 401 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 200))
          status = (await list(provider.token)).status
        }
        assert.equal(status, 401, 'the revoked token is refused within 5 s')
        assert.equal((await list(second.token)).status, 200, "the provider's other token still works")
      } finally {
        await server.stop('SIGKILL')
      }
    })

    test('marketplace create prints {id,name,tokenId,token}; the token discovers, is 403 on provider routes, and revokes', async () => {
      const out = printed(await cli('marketplace', 'create', '--name', 'Deals App'))
      assert.deepEqual(Object.keys(out).sort(), ['id', 'name', 'token', 'tokenId'])
      assert.equal(out.name, 'Deals App')
      assert.match(out.id, /^mkt_/)
      assert.match(out.tokenId, /^tok_/)
      assert.match(out.token, TOKEN_SHAPE)
      const provider = printed(await cli('provider', 'create', '--name', 'Not a marketplace'))
      const server = await startServer({ DATABASE_URL: database.url })
      try {
        const get = (path: string, token: string) => fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } })
        const discover = '/api/v1/discover?latitude=24.7&longitude=46.7'
        const found = await get(discover, out.token)
        assert.equal(found.status, 200)
        assert.deepEqual(await found.json(), { data: [], nextCursor: null })
        assert.equal((await get('/api/v1/listing', out.token)).status, 403)
        assert.equal((await get(discover, provider.token)).status, 403)

        assert.deepEqual(printed(await cli('token', 'revoke', out.tokenId)), { id: out.tokenId, revoked: true })
        const deadline = Date.now() + 5000
        let status = (await get(discover, out.token)).status
        while (status !== 401 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 200))
          status = (await get(discover, out.token)).status
        }
        assert.equal(status, 401, 'the revoked marketplace token is refused within 5 s')
      } finally {
        await server.stop('SIGKILL')
      }
    })

    for (const [title, args] of badUsage) {
      test(`bad usage, ${title}: exit 2, help on stderr, nothing on stdout`, async () => {
        assertUsageError(await cli(...args))
      })
    }

    test('token create for an unknown provider: exit 1, nothing on stdout', async () => {
      assertCommandError(await cli('token', 'create', '--provider', 'prv_00000000000000000000000000'))
    })

    test('token revoke of an unknown token id: exit 1, nothing on stdout', async () => {
      assertCommandError(await cli('token', 'revoke', 'tok_00000000000000000000000000'))
    })
  })
}

describe('npx', () => {
  test('`npx listing-service provider list` works from the repository root', async () => {
    const database = await createTestDatabase('sqlite')
    try {
      // --no: if the package's own bin were not found, fail instead of downloading something from the registry.
      const result = await run('npx', ['--no', 'listing-service', 'provider', 'list'], {
        env: cleanEnv({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }),
        timeoutMs: 30_000,
      })
      assert.equal(result.code, 0, `exit ${result.code}; stderr: ${result.stderr}`)
      assert.deepEqual(JSON.parse(result.stdout), [])
    } finally {
      await database.drop()
    }
  })
})
