import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { createDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { createServices } from './services.js'

/* The only module that touches the process: environment, listening, signals. */

let config
try {
  config = loadConfig(process.env)
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message)
    process.exit(1)
  }
  throw err
}

// `npm run migrate`: apply pending migrations, say which, and exit; nothing else is built.
if (process.argv.includes('migrate')) {
  const database = await createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolMax: 1 })
  const results = (await migrateToLatest(database.db)).results ?? []
  for (const r of results) console.log(`${r.status}: ${r.migrationName}`)
  if (results.length === 0) console.log('Database is up to date.')
  await database.close()
  process.exit(0)
}

const services = await createServices(config)
const { database } = services
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
