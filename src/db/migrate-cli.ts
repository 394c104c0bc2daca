import { loadConfig } from '../config.js'
import { createDatabase } from './connect.js'
import { migrateToLatest } from './migrate.js'

const config = loadConfig(process.env)
const handle = await createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 })
try {
  const { results = [] } = await migrateToLatest(handle.db)
  for (const r of results) console.log(`${r.status}: ${r.migrationName}`)
  if (results.length === 0) console.log('Database is up to date.')
} finally {
  await handle.close()
}
