import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './gatehouse-process.js'

/** Debian's path; .ci/run installs the package when it is missing (docs/operating/pgbouncer.md). */
const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']

/** The pgbouncer binary, or a failure that says how to get it: a missing binary must not pass as a skipped test. */
function pgbouncerBinary(): string {
  for (const path of CANDIDATES) {
    try {
      accessSync(path, constants.X_OK)
      return path
    } catch {
      // not here
    }
  }
  throw new Error(
    `pgbouncer is not installed (looked in ${CANDIDATES.join(', ')}): apt-get install -y pgbouncer, as .ci/run does (docs/operating/pgbouncer.md)`,
  )
}

export interface PgBouncer {
  readonly port: number
  /** postgres:// URL of `alias` through this PgBouncer. */
  url(alias: string): string
  /** What it logged (stderr), for failure messages. */
  output(): string
  /** SIGKILL: every client connection drops at once. */
  kill(): Promise<void>
  /** Starts it again on the same port with the same configuration. */
  restart(): Promise<void>
  stop(): Promise<void>
}

export interface PgBouncerDatabase {
  alias: string
  /** The database on the server `serverUrl` names. */
  dbname: string
  /** Server connections for this database; PgBouncer's default_pool_size otherwise. */
  poolSize?: number
}

/** A written PgBouncer configuration: its directory (the caller removes it), the ini file and the URLs through it. */
export interface PgBouncerConfig {
  readonly dir: string
  readonly ini: string
  /** postgres:// URL of `alias` through the PgBouncer this configuration starts. */
  url(alias: string): string
}

/**
 * The configuration of a PgBouncer in transaction mode (pool_mode=transaction) in front of
 * `serverUrl`, listening on `port` of 127.0.0.1, trusting its clients as the CI PostgreSQL does,
 * without a unix socket or admin console, logging to stderr. Run as root (CI containers), it
 * drops to the `postgres` user, since PgBouncer refuses to run as root.
 */
function writePgBouncerConfig(serverUrl: string, databases: readonly PgBouncerDatabase[], port: number): PgBouncerConfig {
  const server = new URL(serverUrl)
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-pgbouncer-'))
  const user = decodeURIComponent(server.username || 'postgres')
  const ini = join(dir, 'pgbouncer.ini')
  // auth_type=trust still needs the user in auth_file; the password is never asked.
  const users = join(dir, 'users.txt')
  writeFileSync(users, `"${user}" ""\n`, { mode: 0o644 })
  const entries = databases.map(
    (d) =>
      `${d.alias} = host=${server.hostname} port=${server.port || 5432} dbname=${d.dbname} user=${user}` +
      (d.poolSize === undefined ? '' : ` pool_size=${d.poolSize}`),
  )
  writeFileSync(
    ini,
    [
      '[databases]',
      ...entries,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      'default_pool_size = 8',
      'max_client_conn = 200',
      // pg sends DATABASE_STATEMENT_TIMEOUT_MS as a startup parameter, which PgBouncer refuses
      // unless told to ignore it (docs/operating/pgbouncer.md).
      'ignore_startup_parameters = statement_timeout',
      'admin_users =',
      'stats_users =',
      'logfile =',
      'pidfile =',
      ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
      '',
    ].join('\n'),
    { mode: 0o644 },
  )
  return { dir, ini, url: (alias) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${alias}` }
}

/** A PgBouncer of writePgBouncerConfig on a free port, started and stopped by the test. */
export async function startPgBouncer(serverUrl: string, databases: readonly PgBouncerDatabase[]): Promise<PgBouncer> {
  const binary = pgbouncerBinary()
  const port = await freePort()
  const { dir, ini, url } = writePgBouncerConfig(serverUrl, databases, port)
  let child: ChildProcess | undefined
  let output = ''
  const start = async () => {
    const proc = spawn(binary, [ini], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    proc.stdout!.on('data', (d: Buffer) => (output += d.toString()))
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()))
    await untilListening(port, proc, () => output)
  }
  const end = async (signal: NodeJS.Signals) => {
    const proc = child
    child = undefined
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    const closed = new Promise((resolve) => proc.once('close', resolve))
    proc.kill(signal)
    await closed
  }
  await start()
  return {
    port,
    url,
    output: () => output,
    kill: () => end('SIGKILL'),
    restart: start,
    async stop() {
      await end('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Resolves once `port` accepts TCP connections; fails if the process ends first or after 30 s, a
 * safety net that names the failure: PgBouncer listens within milliseconds on a quiet machine,
 * and a loaded one may slow its start but must not fail the test.
 */
async function untilListening(port: number, proc: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null)
      throw new Error(`pgbouncer exited (${proc.exitCode ?? proc.signalCode}):\n${output()}`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port} within 30 s:\n${output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
