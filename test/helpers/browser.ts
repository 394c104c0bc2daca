import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { type Browser, chromium } from 'playwright-core'

/*
 * Headless Chromium for browser tests: Debian's `chromium` package (`.ci/run` installs it with
 * apt-get when missing), driven by playwright-core; no browser download.
 */
export const CHROMIUM_PATH = '/usr/bin/chromium'

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

/** Starts the app on a free loopback port; returns its base URL (no trailing slash). */
export async function listenOnLoopback(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return `http://127.0.0.1:${port}`
}
