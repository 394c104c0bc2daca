// ESLint (flat config) with typescript-eslint. The import boundaries below encode
// docs/architecture.md "Layers": which folder may import which. Change both together.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const fastify = { group: ['fastify', 'fastify-plugin', '@fastify/*'], message: 'Fastify belongs to src/http/ (docs/architecture.md).' }
const drivers = {
  group: ['pg', '@electric-sql/pglite', 'kysely-pglite-dialect'],
  message: 'Drivers belong to src/db/ (docs/architecture.md).',
}
const sqlBuilders = {
  name: 'kysely',
  importNames: ['sql', 'CompiledQuery'],
  message: 'SQL lives in src/repositories/ (docs/architecture.md).',
}
const mailer = { group: ['nodemailer'], message: 'nodemailer belongs to src/mail/ (docs/architecture.md).' }
const httpAndRoot = {
  group: ['**/http/**', '**/cli/**', '**/app.js', '**/server.js', '**/services.js', '**/service-lifecycle.js', '**/cli.js', '**/paths.js'],
  message: 'Domain code does not know the HTTP layer, the command line or the composition root (docs/architecture.md).',
}
const configuration = {
  group: ['**/config.js', '**/config-values.js', '**/config-schema.js'],
  message: 'Domain code takes the values it needs as options it declares itself; src/config.ts builds them (docs/architecture.md).',
}

/** One no-restricted-imports rule per layer: ESLint keeps only the last one per file. */
const layer = (files, patterns, paths = []) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns, paths }] },
})

/*
 * The doors (docs/architecture.md "Doors"): each domain folder has one public module, its
 * index.ts, and the edges (src/http/, src/cli/, src/app.ts) import a domain only through it,
 * values and types alike; never a file behind it. src/services.ts is the composition root: the
 * edges receive the built `Services` and may import its type only (as the configuration's), and
 * no file of src/ but the entry points that build the services (src/server.ts, src/cli.ts)
 * imports a value from it. typescript-eslint's rule, for `allowTypeImports`, so that it adds to
 * a layer's own. The regex counts the `../` that lead out of the folder, so it is written once
 * per depth of file.
 */
const DOMAINS = ['accounts', 'oauth', 'applications', 'console', 'operator', 'revocation', 'limits', 'audit', 'mail', 'db']
const doorOrLib = `lib/|(${DOMAINS.join('|')})/index\\.js$|(services|config)\\.js$`
const rootTypesOnly = (up) => ({
  regex: `^${up}(services|config)\\.js$`,
  allowTypeImports: true,
  message:
    'src/services.ts is the composition root: an edge receives the built Services and imports its type only, as it does the configuration\'s (docs/architecture.md "Doors").',
})
const doorRule = (files, up, own) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            regex: `^${up}(?!${own}${doorOrLib})`,
            message:
              'An edge imports a domain only through its door, the folder\'s index.ts, values and types alike (docs/architecture.md "Doors").',
          },
          rootTypesOnly(up),
        ],
      },
    ],
  },
})
const doors = (folder, maxDepth) =>
  Array.from({ length: maxDepth }, (_, i) => doorRule([`src/${folder}/${'*/'.repeat(i)}*.ts`], `(\\.\\./){${i + 1}}`, `${folder}/|`))

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-control-regex': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },

  // No function over 60 lines in src/ (docs/architecture.md): a route plugin registers named handlers, the
  // command line's commands are a table of small ones (src/cli/commands.ts).
  {
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }] },
  },

  // The plain JavaScript file run by Node directly.
  { files: ['bin/**/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
  // The example single-page app's script, run by the browser with oidc-client-ts's build (docs/applications.md).
  {
    files: ['examples/spa/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { window: 'readonly', document: 'readonly', fetch: 'readonly', URLSearchParams: 'readonly', oidc: 'readonly' },
    },
  },
  // The passkey pages' script, run by the browser (README "Passkeys").
  {
    files: ['views/static/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { window: 'readonly', document: 'readonly', fetch: 'readonly' } },
  },

  // Migrations take Kysely<any> on purpose: they must not depend on today's schema types.
  { files: ['migrations/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },

  // The verifier package is installed by resource APIs: nothing of the server, ever.
  layer(
    ['packages/verifier/src/**'],
    [{ regex: '^(\\.\\./|gatehouse(/|$))', message: '@gatehouse/verifier imports nothing outside its own src/.' }],
  ),
  layer(['packages/verifier/test/**'], [{ regex: '^\\.\\./\\.\\./', message: "The verifier's tests use only the verifier." }]),
  // lib/: pure helpers.
  layer(['src/lib/**'], [{ regex: '^\\.\\./', message: 'src/lib/ imports nothing of the server.' }, fastify, drivers, mailer]),
  // db/: connections, schema, migrations.
  layer(
    ['src/db/**'],
    [{ regex: '^\\.\\./(?!lib/|\\.\\./migrations/index\\.js$)', message: 'src/db/ imports only src/lib/ and the migrations.' }, fastify],
  ),
  // mail/: how mail leaves (SMTP or the outbox); nothing of the server above lib/.
  layer(['src/mail/**'], [{ regex: '^\\.\\./(?!lib/)', message: 'src/mail/ imports only src/lib/.' }, fastify, drivers]),
  // repositories/: SQL only, over db/.
  layer(['src/repositories/**'], [{ regex: '^\\.\\./(?!db/)', message: 'Repositories import only src/db/.' }, fastify]),
  // Protocol and domain: no Fastify, no drivers, no SQL, no HTTP, no command line, no configuration
  // module (src/mail/ and src/repositories/, domain folders too, have the stricter rules above).
  layer(
    ['src/oauth/**', 'src/revocation/**', 'src/accounts/**', 'src/console/**', 'src/limits/**', 'src/operator/**', 'src/audit/**'],
    [fastify, drivers, mailer, httpAndRoot, configuration],
    [sqlBuilders],
  ),
  // The command line: never the HTTP layer, drivers or SQL.
  layer(
    ['src/cli/**'],
    [
      fastify,
      drivers,
      mailer,
      { group: ['**/http/*', '**/http/**'], message: 'The command line does not use the HTTP layer.' },
      { group: ['**/repositories/*'], message: 'The command line calls the services, never repositories (docs/architecture.md).' },
    ],
    [sqlBuilders],
  ),
  // HTTP: routes call the protocol layer, never repositories or SQL.
  layer(
    ['src/http/**'],
    [
      { group: ['**/repositories/*'], message: 'Routes call the services, never repositories (docs/architecture.md).' },
      { group: ['**/cli/*', '**/cli.js'], message: 'The HTTP layer does not use the command line.' },
      drivers,
      mailer,
    ],
    [sqlBuilders],
  ),
  ...doors('http', 4),
  ...doors('cli', 2),
  // src/app.ts builds the HTTP edge: its own routes and hooks, the views' paths, and the doors.
  doorRule(['src/app.ts'], '\\./', 'http/|paths\\.js$|'),
  // The other top-level modules do not import the composition root; the entry points build it.
  {
    files: ['src/*.ts'],
    ignores: ['src/app.ts', 'src/server.ts', 'src/cli.ts', 'src/services.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [rootTypesOnly('\\./')] }] },
  },
)
