import { type AddressInfo, type Server, type Socket, createServer, connect } from 'node:net'

/**
 * A TCP relay in front of a real server (Postgres, Gatehouse), to break connections the way a
 * network does: `cut()` drops every relayed connection and refuses new ones until `restore()`;
 * `freeze()` silently stops relaying the open ones (a forgotten NAT entry), new ones still work.
 */
export interface TcpProxy {
  readonly port: number
  cut(): void
  restore(): void
  freeze(): void
  close(): Promise<void>
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let open = true
  const server: Server = createServer((client) => {
    if (!open) {
      client.destroy()
      return
    }
    const upstream = connect(targetPort, targetHost)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      open = false
      for (const s of sockets) s.destroy()
    },
    restore() {
      open = true
    },
    freeze() {
      for (const s of sockets) {
        s.unpipe()
        s.pause()
      }
    },
    async close() {
      open = false
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A relay in front of the PostgreSQL server of `databaseUrl`, and the same URL through it. */
export async function relayDatabase(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const url = new URL(databaseUrl)
  const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432))
  url.hostname = '127.0.0.1'
  url.port = String(proxy.port)
  return { proxy, url: url.toString() }
}
