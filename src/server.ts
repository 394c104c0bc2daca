import { buildApp } from './app.js'
import { ConfigError, loadProcessConfig } from './config.js'
import { describeFailure } from './db/availability.js'
import { createDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { systemClock } from './lib/clock.js'
import { Janitor } from './limits/janitor.js'
import { type Services, createServices } from './services.js'

/* The only module that touches the process: environment, listening, signals. */

/*
 * The last line of defence (README "Failures and recovery"): an exception nothing caught leaves
 * the process in a state nobody planned for, so it is logged once and the process exits
 * non-zero for its supervisor to restart, never swallowed and never left half alive. Database
 * faults never get here: every pg client has its error listener (resilientPool).
 */
let logFatal: (err: unknown, kind: string) => void = (err, kind) => console.error(`${kind}:`, err)
let dying = false
function die(kind: string, err: unknown) {
  if (dying) return
  dying = true
  logFatal(err, kind)
  process.exit(1)
}
process.on('uncaughtException', (err) => die('uncaughtException', err))
process.on('unhandledRejection', (reason) => die('unhandledRejection', reason))

let config
try {
  config = loadProcessConfig()
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message)
    process.exit(1)
  }
  throw err
}

// `npm run migrate`: apply pending migrations, say which, and exit; nothing else is built.
if (process.argv.includes('migrate')) {
  const database = await createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, pool: { ...config.dbPool, max: 1 } })
  let code = 0
  try {
    const results = (await migrateToLatest(database.db)).results ?? []
    for (const r of results) console.log(`${r.status}: ${r.migrationName}`)
    if (results.length === 0) console.log('Database is up to date.')
  } catch (err) {
    console.error(`Migration failed: ${err instanceof Error ? err.message : String(err)}`)
    code = 1
  }
  await database.close().catch(() => {})
  process.exit(code)
}

// `npm run janitor`: one janitor run now (README "Limits and quotas"), rows removed per table,
// and exit; 1 with one line when it fails. Two connections: the lock's and the deletes'.
if (process.argv.includes('janitor')) {
  const database = await createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, pool: { ...config.dbPool, max: 2 } })
  let code = 0
  try {
    await migrateToLatest(database.db)
    const janitor = new Janitor({ database, clock: systemClock, log: { info() {}, warn() {} }, ...config.janitor })
    const { ran, removed } = await janitor.runOnce()
    if (!ran) console.log('Another Gatehouse process is running the janitor; nothing done.')
    else for (const [table, n] of Object.entries(removed)) console.log(`${table}: ${n} removed`)
  } catch (err) {
    console.error(`Janitor failed: ${describeFailure(err)}`)
    code = 1
  }
  await database.close().catch(() => {})
  process.exit(code)
}

let services: Services
try {
  services = await createServices(config)
} catch (err) {
  // Start-up needs the database (migrations, the LISTEN connection): say so in one line.
  console.error(`Gatehouse could not start: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
const { database, log } = services
logFatal = (err, kind) => log.fatal({ err }, `${kind}: exiting so that a supervisor restarts Gatehouse`)
const app = await buildApp(services)

let closing = false
async function shutdown(signal: string) {
  if (closing) return
  closing = true
  app.log.info({ signal }, 'shutting down')
  const force = setTimeout(() => process.exit(1), 10_000)
  force.unref()
  try {
    await app.close()
    await services.close()
    process.exit(0)
  } catch (err) {
    app.log.error({ err }, 'shutdown failed')
    process.exit(1)
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

await app.listen({ port: config.port, host: config.host })
app.log.info(
  { url: config.publicUrl, database: database.kind === 'pglite' ? `embedded (${config.dataDir})` : 'postgres' },
  'Gatehouse is listening',
)
