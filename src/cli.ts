import { AuditLog } from './audit/audit-log.js'
import { ConfigError, loadProcessConfig } from './config.js'
import { createDatabase } from './db/connect.js'
import { systemClock } from './lib/clock.js'
import { runCli } from './cli/run.js'

/*
 * The command line's process entry, as src/server.ts is the server's: it reads the
 * environment and argv, runs one command (src/cli/run.ts) and exits with its code.
 */

try {
  const config = loadProcessConfig()
  const code = await runCli(
    process.argv.slice(2),
    {
      config,
      clock: systemClock,
      // One connection is enough for one command; the janitor's lock takes a second one.
      openDatabase: () => createDatabase({ url: config.databaseUrl, dataDir: config.dataDir, pool: { ...config.dbPool, max: 2 } }),
      // No actor and no address: the command line has neither. The detail says where it came from.
      record: (database, event) =>
        new AuditLog({
          db: database.db,
          clock: systemClock,
          log: { warn: (_fields, message) => console.error(`gatehouse: ${message}`) },
        }).record({ ...event, detail: event.detail ? `${event.detail}; from the command line` : 'From the command line' }, null, null),
    },
    { out: (text) => console.log(text), err: (text) => console.error(text) },
  )
  process.exitCode = code
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `gatehouse: ${err instanceof Error ? err.message : String(err)}`)
  process.exitCode = 1
}
