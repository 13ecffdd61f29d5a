import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { _ } from 'ajv'
import standalone from 'ajv/dist/standalone/index.js'
import { build, type Plugin } from 'esbuild'
import { createAjv } from '../src/http/validation.js'
import { CreateListingBody, PatchListingBody } from '../src/listings/schemas.js'
import { CreateWebhookBody } from '../src/webhooks/schemas.js'

/**
 * Builds the console (docs/design/console.md): one bundle of console/src into dist/console/assets, names
 * fingerprinted by content, each beside its .br and .gz at the best ratio (served as they are by @fastify/static),
 * and manifest.json naming the entry files for the page (src/console/page.ts). Run by `npm run build`, so
 * `npm install` does it.
 */

const OUT = fileURLToPath(new URL('../dist/console/assets/', import.meta.url))

/** The API's own request schemas as plain JSON Schema, without the prose meant for the OpenAPI document. */
function bare(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema), (key, value: unknown) => (key === 'description' || key === 'examples' ? undefined : value)) as unknown
}

const schemas: Record<string, unknown> = {
  'create-listing': bare(CreateListingBody),
  'patch-listing': bare(PatchListingBody),
  'create-webhook': bare(CreateWebhookBody),
}

const VOCABULARY = fileURLToPath(new URL('../src/http/schema-vocabulary.ts', import.meta.url))

/**
 * `import validate from 'schema:create-listing'` in the console gives a validator of the server's schema, generated
 * now by the server's own Ajv set-up as plain code (Ajv standalone): no Ajv and no eval in the browser, so the
 * CSP's script-src 'self' holds. Its formats and exact decimal places are schema-vocabulary.ts's, imported.
 */
export const schemaModules: Plugin = {
  name: 'schemas',
  setup(builder) {
    builder.onResolve({ filter: /^schema:/ }, (args) => ({ path: args.path.slice('schema:'.length), namespace: 'schema' }))
    builder.onLoad({ filter: /.*/, namespace: 'schema' }, (args) => {
      const schema = schemas[args.path]
      if (schema === undefined) throw new Error(`no schema named ${args.path}`)
      const ajv = createAjv({ vocabulary: _`require(${VOCABULARY})` })
      return { contents: standalone.default(ajv, ajv.compile(schema as object)), loader: 'js', resolveDir: fileURLToPath(new URL('.', import.meta.url)) }
    })
  },
}

export async function buildConsole(): Promise<{ script: string; style: string; files: string[] }> {
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  const result = await build({
    entryPoints: { console: fileURLToPath(new URL('src/main.tsx', import.meta.url)) },
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: OUT,
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [schemaModules],
  })
  const files = Object.keys(result.metafile.outputs).map((path) => basename(path))
  const script = files.find((name) => name.endsWith('.js'))
  const style = files.find((name) => name.endsWith('.css'))
  if (!script || !style) throw new Error(`the console build made ${files.join(', ')}: no script or no style sheet`)
  for (const name of files) {
    const identity = readFileSync(`${OUT}${name}`)
    writeFileSync(`${OUT}${name}.br`, brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }))
    writeFileSync(`${OUT}${name}.gz`, gzipSync(identity, { level: 9 }))
  }
  const manifest = { script, style, files }
  writeFileSync(`${OUT}manifest.json`, `${JSON.stringify(manifest, null, 2)}\n`)
  return manifest
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const manifest = await buildConsole()
  console.log(`console: ${manifest.files.join(', ')} in ${OUT} (${readdirSync(OUT).length} files)`)
}
