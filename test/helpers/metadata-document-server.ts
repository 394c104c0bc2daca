import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { type IncomingMessage, type ServerResponse, createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * A client's own web server on loopback, serving its Client ID Metadata Document
 * (docs/agents.md): real https with a certificate made for the test by openssl (its CA file is
 * what CLIENT_ID_METADATA_EXTRA_CA_FILE names), or plain http. It counts the connections and the
 * requests it receives, so a test can show that a refusal happened before any connection.
 */

export interface DocumentRoute {
  status?: number
  headers?: Record<string, string>
  /** A JSON value, sent as application/json unless headers say otherwise; a string is sent as it is. */
  body?: unknown
  /** Answers nothing at all: a document that never arrives. */
  hang?: boolean
  /** Sends the body in two chunks with no Content-Length (chunked transfer coding), so only its bytes tell its size. */
  chunked?: boolean
}

export interface DocumentServer {
  /** https://127.0.0.1:<port> (or http://). */
  readonly origin: string
  /** The certificate file to trust (CLIENT_ID_METADATA_EXTRA_CA_FILE); https only. */
  readonly caFile: string | undefined
  readonly caPem: string | undefined
  /** TCP connections accepted so far. */
  connections: number
  /** Requests received per path. */
  readonly requests: Map<string, number>
  /** What `path` answers; routes can be set at any time. */
  route(path: string, route: DocumentRoute | ((origin: string) => DocumentRoute)): void
  /** A document for `path` naming itself and the given redirect URIs, a public client. */
  document(path: string, extra?: Record<string, unknown>): string
  close(): Promise<void>
}

/** A self-signed certificate for 127.0.0.1 and localhost, valid a day, in a fresh directory. */
function selfSignedCertificate(): { dir: string; key: string; cert: string; certFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cimd-'))
  const keyFile = join(dir, 'key.pem')
  const certFile = join(dir, 'cert.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  )
  return { dir, key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile }
}

export async function startDocumentServer(options: { protocol?: 'https' | 'http' } = {}): Promise<DocumentServer> {
  const protocol = options.protocol ?? 'https'
  const routes = new Map<string, DocumentRoute | ((origin: string) => DocumentRoute)>()
  const requests = new Map<string, number>()
  const tls = protocol === 'https' ? selfSignedCertificate() : undefined
  let origin = ''
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!
    requests.set(path, (requests.get(path) ?? 0) + 1)
    const found = routes.get(path)
    const route = typeof found === 'function' ? found(origin) : found
    if (route === undefined) {
      res.writeHead(404).end()
      return
    }
    if (route.hang) return
    const body = route.body === undefined ? '' : typeof route.body === 'string' ? route.body : JSON.stringify(route.body)
    const length = route.chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }
    res.writeHead(route.status ?? 200, { 'content-type': 'application/json', ...length, ...route.headers })
    if (route.chunked) {
      res.write(body.slice(0, body.length >> 1))
      res.end(body.slice(body.length >> 1))
      return
    }
    res.end(body)
  }
  const server: Server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, handler) : createHttpServer(handler)
  const state = { connections: 0 }
  const sockets = new Set<import('node:net').Socket>()
  server.on('connection', (socket) => {
    state.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `${protocol}://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    caFile: tls?.certFile,
    caPem: tls?.cert,
    get connections() {
      return state.connections
    },
    set connections(n: number) {
      state.connections = n
    },
    requests,
    route(path, route) {
      routes.set(path, route)
    },
    document(path, extra = {}) {
      const url = `${origin}${path}`
      routes.set(path, {
        body: {
          client_id: url,
          client_name: 'Example Assistant',
          redirect_uris: ['http://127.0.0.1:53690/callback'],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
          ...extra,
        },
      })
      return url
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
      if (tls) rmSync(tls.dir, { recursive: true, force: true })
    },
  }
}
