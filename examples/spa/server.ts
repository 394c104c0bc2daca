import { readFile } from 'node:fs/promises'
import { type Server, createServer } from 'node:http'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/*
 * Serves the example single-page app (examples/spa/): `npm run example:spa`. Three static
 * files, oidc-client-ts's browser build as the npm package ships it, and /config.json with the
 * issuer and the client ID; nothing of the protocol happens here, it all runs in the browser.
 *
 * Register a single-page app in the Gatehouse console with redirect URI http://localhost:4002/
 * and post-logout redirect URI http://localhost:4002/ (no secret is issued), then:
 *   GATEHOUSE_ISSUER=http://127.0.0.1:3000 CLIENT_ID=… npm run example:spa
 */

export interface SpaExampleOptions {
  /** The issuer (PUBLIC_URL of Gatehouse). */
  issuer: string
  clientId: string
  port: number
}

export interface SpaExample {
  /** http://localhost:PORT: the origin of the redirect and post-logout URIs, which Gatehouse allows by CORS. */
  url: string
  close(): Promise<void>
}

const here = dirname(fileURLToPath(import.meta.url))
const library = join(dirname(createRequire(import.meta.url).resolve('oidc-client-ts/package.json')), 'dist/browser/oidc-client-ts.min.js')

const FILES: Record<string, { path: string; type: string }> = {
  '/': { path: join(here, 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { path: join(here, 'app.js'), type: 'text/javascript; charset=utf-8' },
  '/oidc-client-ts.min.js': { path: library, type: 'text/javascript; charset=utf-8' },
}

export async function startSpaExample(options: SpaExampleOptions): Promise<SpaExample> {
  const config = JSON.stringify({ issuer: options.issuer, clientId: options.clientId })
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    if (request.method !== 'GET' && request.method !== 'HEAD') return void response.writeHead(405, { allow: 'GET, HEAD' }).end()
    if (path === '/config.json') return void response.writeHead(200, { 'content-type': 'application/json' }).end(config)
    const file = FILES[path]
    if (!file) return void response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found')
    readFile(file.path).then(
      (body) => response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache' }).end(body),
      () => response.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(options.port, 'localhost', resolve))
  return {
    url: `http://localhost:${options.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // A browser keeps its connections open; the example has nothing to finish on them.
        server.closeAllConnections()
      }),
  }
}

async function main(env: Record<string, string | undefined>): Promise<void> {
  if (!env.CLIENT_ID) {
    console.error('Set CLIENT_ID (a single-page app registered in the Gatehouse console; it has no secret).')
    process.exit(1)
  }
  const spa = await startSpaExample({
    issuer: env.GATEHOUSE_ISSUER ?? 'http://127.0.0.1:3000',
    clientId: env.CLIENT_ID,
    port: Number(env.PORT ?? 4002),
  })
  console.log(`Example single-page app on ${spa.url}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void spa.close().then(() => process.exit(0)))
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.env)
