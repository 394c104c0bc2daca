import { rmSync } from 'node:fs'
import { pgbouncerBinary, untilListening, writePgBouncerConfig } from '../test/helpers/pgbouncer.js'
import { type RunningServer, startGatehouse } from './gatehouse.js'
import { type Child, freePort, spawnPinned } from './proc.js'

/*
 * README "Behind PgBouncer": Gatehouse as several processes through one PgBouncer in
 * transaction mode, configured as that section says (DATABASE_URL through PgBouncer,
 * DATABASE_LISTEN_URL direct, DATABASE_PREPARED_STATEMENTS=false). PgBouncer's configuration is
 * the integration test's (test/helpers/pgbouncer.ts); here it runs pinned to the server's CPU,
 * with the Gatehouse processes, so that its CPU counts as the server's.
 */

/** Why the PgBouncer rows cannot run here (the binary is missing), or null. */
export function pgbouncerMissing(): string | null {
  try {
    pgbouncerBinary()
    return null
  } catch (err) {
    return err instanceof Error ? err.message : String(err)
  }
}

export interface PooledOptions {
  cpu: number
  /** The benchmark database, direct: PgBouncer's server and each process's LISTEN connection. */
  databaseUrl: string
  processes: number
  /** DATABASE_POOL_MAX of each process, and PgBouncer's server connections in all. */
  poolMax: number
}

/** PgBouncer and `processes` Gatehouse processes, all pinned to `cpu`; one server whose origins share the load. */
export async function startPooledGatehouses(opts: PooledOptions): Promise<RunningServer> {
  const binary = pgbouncerBinary()
  const dbname = new URL(opts.databaseUrl).pathname.slice(1)
  const port = await freePort()
  // As many server connections as one process direct opens: PostgreSQL sees the same number of
  // backends either way, and the processes' 2 × poolMax client connections queue in PgBouncer.
  const config = writePgBouncerConfig(opts.databaseUrl, [{ alias: dbname, dbname, poolSize: opts.poolMax }], port)
  const started = spawnPinned('pgbouncer', binary, [config.ini], { cpu: opts.cpu })
  const bouncer: Child = {
    ...started,
    async stop() {
      await started.stop()
      rmSync(config.dir, { recursive: true, force: true })
    },
  }
  const children: Child[] = [bouncer]
  try {
    await untilListening(port, started.process, started.output)
    const servers: RunningServer[] = []
    for (let i = 1; i <= opts.processes; i++) {
      const s = await startGatehouse({
        cpu: opts.cpu,
        databaseUrl: config.url(dbname),
        name: `gatehouse ${i} via pgbouncer`,
        env: {
          DATABASE_LISTEN_URL: opts.databaseUrl,
          DATABASE_PREPARED_STATEMENTS: 'false',
          DATABASE_POOL_MAX: String(opts.poolMax),
        },
      })
      servers.push(s)
      children.push(s.child)
    }
    const [first] = servers
    if (!first) throw new Error('no Gatehouse process to put behind PgBouncer')
    return { child: first.child, origin: first.origin, group: { children, origins: servers.map((s) => s.origin) } }
  } catch (err) {
    for (const c of children.reverse()) await c.stop()
    throw err
  }
}
