import { setFlagsFromString } from 'node:v8'
import { buildApp } from './app.js'
import { ConfigError, loadProcessConfig } from './config.js'
import { type AssembledServices, createServices } from './services.js'
import { SecretKeyError } from './lib/secret-key.js'
import { type ControlSocket, answerCommands } from './cli/control-server.js'

/*
 * The server's process entry, as src/cli.ts is the command line's: the only modules that touch
 * the process (environment, listening, signals, exit codes; docs/architecture.md "Composition root").
 */

/*
 * The last line of defence (docs/operating/backups-and-upgrades.md "Failures and recovery"): an exception nothing caught leaves
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

/*
 * A start-up refused for its configuration (a bad setting, no SECRET_KEY with PostgreSQL, a port
 * it cannot listen on) prints one plain line and exits 78, EX_CONFIG of sysexits(3): a supervisor
 * told not to restart on it (systemd's RestartPreventExitStatus=78, docs/operating/backups-and-upgrades.md "Operations") does not
 * restart in a loop what only a change of configuration can mend.
 */
const EX_CONFIG = 78

let config
try {
  config = loadProcessConfig()
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message)
    process.exit(EX_CONFIG)
  }
  throw err
}

/*
 * V8 starts the next full collection once the old generation has grown by a factor over what the
 * last one left, a factor of up to 4 wherever the heap limit is 2 GB or more (any machine with
 * about 8 GB of memory). Under the benchmark's load a server's old space so grew to several
 * times what it had in use, past the memory budget (docs/performance.md "Memory"; docs/scaling.md "1. One
 * process").
 * HEAP_GROWING_PERCENT fixes the factor; V8 reads the flag each time it sets the next limit, so
 * setting it here, after start, takes effect (Node keeps V8's flags writable).
 */
if (config.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`)

let services: AssembledServices
try {
  services = await createServices(config)
} catch (err) {
  // SECRET_KEY missing with PostgreSQL, or a key file refused (src/lib/secret-key.ts): its one line.
  if (err instanceof SecretKeyError) {
    console.error(err.message)
    process.exit(EX_CONFIG)
  }
  // Start-up needs the database (migrations, the LISTEN connection): say so in one line.
  console.error(`Gatehouse could not start: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
const { database, log } = services
logFatal = (err, kind) => log.fatal({ err }, `${kind}: exiting so that a supervisor restarts Gatehouse`)
const app = await buildApp(services)
let commands: ControlSocket | undefined

let closing = false
async function shutdown(signal: string) {
  if (closing) return
  closing = true
  log.info({ signal }, 'shutting down')
  const force = setTimeout(() => process.exit(1), 10_000)
  force.unref()
  try {
    // Commands beside the server first: one under way finishes while the services are open.
    await commands?.close()
    await app.close()
    await services.close()
    process.exit(0)
  } catch (err) {
    log.error({ err }, 'shutdown failed')
    process.exit(1)
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

/** Why the address cannot be had, in words, for the two refusals only a change of configuration mends. */
const LISTEN_REFUSALS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use (set PORT to another, or stop what listens there)',
  EACCES: 'the port needs privileges this process lacks (set PORT to 1024 or above)',
  EADDRNOTAVAIL: 'no network interface of this host has that address (set HOST to one it has)',
}

try {
  await app.listen({ port: config.port, host: config.host })
} catch (err) {
  const why = LISTEN_REFUSALS[(err as NodeJS.ErrnoException).code ?? '']
  if (why === undefined) throw err
  const address = config.host.includes(':') ? `[${config.host}]:${config.port}` : `${config.host}:${config.port}`
  console.error(`Gatehouse cannot listen on ${address}: ${why}`)
  await services.close().catch(() => {})
  process.exit(EX_CONFIG)
}
// With the embedded database, `gatehouse …` runs its commands here (src/cli/control-socket.ts).
if (database.kind === 'pglite' && !config.dataDir.startsWith('memory://')) {
  commands = await answerCommands({ dataDir: config.dataDir, services, mail: config.mail, log })
}
log.info(
  { url: config.publicUrl, database: database.kind === 'pglite' ? `embedded (${config.dataDir})` : 'postgres' },
  'Gatehouse is listening',
)
