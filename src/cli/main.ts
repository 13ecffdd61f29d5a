#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.js'
import { openDatabase, type Database } from '../db/connection.js'
import { migrate } from '../db/migrate.js'
import { MarketplaceRepository } from '../providers/marketplaces.js'
import { ProviderRepository } from '../providers/repository.js'
import { ConsoleSessions } from '../console/sessions.js'
import { signInLink } from '../console/sign-in-link.js'

const HELP = `Usage: listing-service <command>

Commands:
  serve [--no-migrate]                               start the HTTP API (same as npm start); --no-migrate
                                                     starts without migrating (the schema must be current)
  migrate                                            apply pending database migrations
  provider create --name <name> [--industry <name>]  create a provider and its first token
  provider list                                      list providers (never tokens)
  token create --provider <providerId>               issue another token for a provider
  token revoke <tokenId>                             revoke a token (a provider's or a marketplace's)
  marketplace create --name <name>                   create a marketplace (discovery client) and its token
  console-link --provider <providerId>               a one-time console sign-in link (15 minutes)
  console-sessions revoke --provider <providerId>    end every console session of a provider, on every
                                                     instance (and spend its unused sign-in links)

Every command reads DATABASE_URL (default sqlite:./data/listings.db) and prints JSON on stdout.
`

/** Bad usage: help on stderr, exit 2. */
class UsageError extends Error {}

/** A well-formed command that cannot be carried out (unknown provider or token): exit 1. */
class CommandError extends Error {}

function parse(args: string[], options: Record<string, { type: 'string' }>, positionals: number) {
  let parsed
  try {
    parsed = parseArgs({ args, options, allowPositionals: positionals > 0, strict: true })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  if (parsed.positionals.length !== positionals) throw new UsageError(`expected ${positionals} argument(s)`)
  return parsed
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`${flag} is required`)
  return value
}

async function withDatabase<T>(work: (database: Database) => Promise<T>): Promise<T> {
  const database = openDatabase(loadConfig(process.env).DATABASE_URL)
  try {
    // So that every command works on a fresh database; cheap when nothing is pending.
    await migrate(database)
    return await work(database)
  } finally {
    await database.close()
  }
}

/** A command whose one option, `--provider`, must name a provider. */
function withProvider<T>(args: string[], work: (database: Database, providerId: string) => Promise<T>): Promise<T> {
  const { values } = parse(args, { provider: { type: 'string' } }, 0)
  const providerId = required(values.provider, '--provider')
  return withDatabase(async (database) => {
    if (!(await new ProviderRepository(database).exists(providerId))) throw new CommandError(`no provider with id ${providerId}`)
    return work(database, providerId)
  })
}

async function run(argv: string[]): Promise<unknown> {
  const [group, action, ...rest] = argv
  const command = [group, action].join(' ')
  switch (command) {
    case 'provider create': {
      const { values } = parse(rest, { name: { type: 'string' }, industry: { type: 'string' } }, 0)
      const name = required(values.name, '--name')
      if (values.industry !== undefined) required(values.industry, '--industry')
      return withDatabase(async (database) => {
        const provider = await new ProviderRepository(database).create({ name, industry: values.industry }, Date.now())
        return { id: provider.id, name: provider.name, industry: provider.industry, tokenId: provider.token.id, token: provider.token.token }
      })
    }
    case 'provider list':
      parse(rest, {}, 0)
      return withDatabase((database) => new ProviderRepository(database).list())
    case 'token create':
      return withProvider(rest, (database, providerId) => new ProviderRepository(database).createToken(providerId, Date.now()))
    case 'marketplace create': {
      const { values } = parse(rest, { name: { type: 'string' } }, 0)
      const name = required(values.name, '--name')
      return withDatabase(async (database) => {
        const marketplace = await new MarketplaceRepository(database).create(name, Date.now())
        return { id: marketplace.id, name: marketplace.name, tokenId: marketplace.tokenId, token: marketplace.token }
      })
    }
    case 'console-sessions revoke':
      return withProvider(rest, async (database, providerId) => {
        const revoked = await new ConsoleSessions(database, loadConfig(process.env)).revokeProvider(providerId, Date.now())
        return { providerId, revoked: revoked.sessions, linksSpent: revoked.links }
      })
    case 'token revoke': {
      const tokenId = parse(rest, {}, 1).positionals[0] as string
      return withDatabase(async (database) => {
        if (!(await new ProviderRepository(database).revokeToken(tokenId, Date.now()))) throw new CommandError(`no token with id ${tokenId}`)
        return { id: tokenId, revoked: true }
      })
    }
  }
  if (group === 'console-link') {
    return withProvider(argv.slice(1), (database, providerId) => signInLink(database, loadConfig(process.env), providerId, Date.now()))
  }
  if (group === 'migrate' && argv.length === 1) return withDatabase(async () => ({ migrated: true }))
  throw new UsageError(group === undefined ? 'a command is required' : `unknown command: ${argv.join(' ')}`)
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'serve' && (argv.length === 1 || (argv.length === 2 && argv[1] === '--no-migrate'))) {
    // Loaded only here: the other commands start faster without it.
    const { serve } = await import('../server.js')
    await serve({ migrate: argv[1] !== '--no-migrate' })
    return -1
  }
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === 'help' || argv[0] === '-h')) {
    process.stdout.write(HELP)
    return 0
  }
  try {
    process.stdout.write(`${JSON.stringify(await run(argv))}\n`)
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`listing-service: ${error.message}\n\n${HELP}`)
      return 2
    }
    if (error instanceof CommandError || error instanceof ConfigError) {
      process.stderr.write(`${JSON.stringify({ error: error.message })}\n`)
      return 1
    }
    throw error
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (error: unknown) => {
    // Start-up failures (database unreachable, migration failed): one line, no stack.
    process.stderr.write(`listing-service: ${(error as Error).message}\n`)
    process.exit(1)
  },
)
