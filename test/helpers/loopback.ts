import { type AddressInfo, createServer } from 'node:net'
import type { TestContext } from './app.js'

/*
 * A test app listening on loopback: for the browser tests and for the clients nobody here wrote
 * (openid-client, oauth4webapi), which speak HTTP to a real socket rather than through inject.
 */

/**
 * `http://127.0.0.1:<a free port>`, to be the PUBLIC_URL of an app that then listens there with
 * listenOnLoopback. Pages refuse a form whose Origin is not PUBLIC_URL's origin
 * (src/http/page-security.ts), and Chromium sends the origin it loaded the page from, so a browser
 * test's app must know its own address before it is built.
 */
export async function freeLoopbackUrl(): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return `http://127.0.0.1:${port}`
}

/**
 * Builds the app with PUBLIC_URL on a free loopback port and listens there; returns that URL.
 * `hostname: 'localhost'` names the port by `localhost` instead of 127.0.0.1: a WebAuthn RP ID is a
 * domain, never an IP address, and localhost is a secure context.
 */
export async function listenOnLoopback(
  build: (env: Record<string, string>) => Promise<TestContext>,
  options: { hostname?: 'localhost' } = {},
): Promise<{ t: TestContext; baseUrl: string }> {
  const { port } = new URL(await freeLoopbackUrl())
  const baseUrl = `http://${options.hostname ?? '127.0.0.1'}:${port}`
  const t = await build({ PUBLIC_URL: baseUrl })
  await t.app.listen({ port: Number(port), host: '127.0.0.1' })
  return { t, baseUrl }
}
