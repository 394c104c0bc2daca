import { type Socket, createServer } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { manualClock } from '../../../src/lib/clock.js'
import { classifyAddress } from '../../../src/oauth/clients/metadata-addresses.js'
import { hostPermitted } from '../../../src/oauth/clients/metadata-document.js'
import { type MetadataFetchSettings, fetchClientMetadata } from '../../../src/oauth/clients/metadata-fetch.js'
import {
  ClientMetadataResolver,
  MAX_CONCURRENT_FETCHES,
  MAX_CONCURRENT_FETCHES_PER_HOST,
} from '../../../src/oauth/clients/metadata-resolver.js'
import { clientIdKnown } from '../../../src/oauth/token/client-auth.js'
import { type DocumentServer, startDocumentServer } from '../../helpers/metadata-document-server.js'

/*
 * Fetching a client's metadata document (docs/decisions/026-client-metadata-documents.md "Fetch
 * safety"), against real https and http servers on loopback: what the URL or its addresses decide
 * is refused before any connection (the server counts none); redirects, oversize and slow
 * documents, wrong types and mismatched client_ids are refused after one; the cache keeps a
 * document within its Cache-Control bounds and a refusal for a minute, by the injected clock.
 */

let https: DocumentServer
let http: DocumentServer
beforeAll(async () => {
  https = await startDocumentServer()
  http = await startDocumentServer({ protocol: 'http' })
})
afterAll(async () => {
  await https.close()
  await http.close()
})
beforeEach(() => {
  https.connections = 0
  http.connections = 0
  https.requests.clear()
  http.requests.clear()
})

/** Development settings: loopback allowed, the test's CA trusted. */
const dev = (): MetadataFetchSettings => ({
  allowPrivateAddresses: true,
  hosts: { allowed: [], blocked: [] },
  timeoutMs: 5_000,
  maxBytes: 5_120,
  extraCa: https.caPem,
})
/** A production server's settings: no private addresses. */
const production = (): MetadataFetchSettings => ({ ...dev(), allowPrivateAddresses: false })

/** A server on the loopback `address` that accepts connections and never answers: documents that never arrive. */
async function silentServer(address: string): Promise<{ origin: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, address, resolve))
  const { port } = server.address() as { port: number }
  return {
    origin: `https://${address}:${port}`,
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

async function refused(url: string, settings: MetadataFetchSettings, reason: RegExp, connected: boolean) {
  const outcome = await fetchClientMetadata(url, settings)
  expect(outcome).toMatchObject({ ok: false, connected })
  if (!outcome.ok) expect(outcome.reason).toMatch(reason)
}

describe('a document that may be fetched', () => {
  it('is fetched over https with the extra CA, and defines a public client with exactly its redirect URIs', async () => {
    const url = https.document('/client.json', {
      client_uri: 'https://assistant.example/',
      redirect_uris: ['http://127.0.0.1:53690/callback', 'https://assistant.example/cb'],
    })
    const outcome = await fetchClientMetadata(url, dev())
    expect(outcome).toEqual({
      ok: true,
      maxAgeSeconds: undefined,
      metadata: {
        clientId: url,
        clientName: 'Example Assistant',
        logoUri: undefined,
        clientUri: 'https://assistant.example/',
        redirectUris: ['http://127.0.0.1:53690/callback', 'https://assistant.example/cb'],
      },
    })
    expect(https.requests.get('/client.json')).toBe(1)
  })

  it('is fetched over http from loopback only in development', async () => {
    const url = http.document('/client.json')
    expect(await fetchClientMetadata(url, dev())).toMatchObject({ ok: true })
    await refused(url, production(), /must use https/, false)
    expect(http.requests.get('/client.json')).toBe(1)
  })

  it('is refused when its certificate is not trusted (no extra CA)', async () => {
    const url = https.document('/client.json')
    await refused(url, { ...dev(), extraCa: undefined }, /could not be fetched/, true)
    expect(https.requests.get('/client.json')).toBeUndefined()
  })
})

describe('refused before any connection', () => {
  it('refuses loopback without the development setting, by literal and by name', async () => {
    const url = https.document('/client.json')
    await refused(url, production(), /address this server does not connect to \(127\.0\.0\.1\)/, false)
    await refused(url.replace('127.0.0.1', 'localhost'), production(), /address this server does not connect to/, false)
    expect(https.connections).toBe(0)
  })

  it('refuses link-local (cloud metadata), IPv4-mapped, unspecified and multicast addresses even in development', async () => {
    const port = new URL(https.origin).port
    for (const url of [
      'https://169.254.169.254/latest/meta-data',
      `https://[::ffff:7f00:1]:${port}/client.json`,
      `https://0.0.0.0:${port}/client.json`,
      'https://224.0.0.1/client.json',
      'https://[fe80::1]/client.json',
    ]) {
      await refused(url, dev(), /address this server does not connect to/, false)
    }
    expect(https.connections).toBe(0)
  })

  it('refuses [::1] and private networks without the development setting', async () => {
    for (const url of ['https://[::1]/client.json', 'https://10.0.0.1/client.json', 'https://192.168.1.1/c', 'https://[fd00::1]/c']) {
      await refused(url, production(), /address this server does not connect to/, false)
    }
  })

  it('classifies addresses as the registries say', () => {
    const expected = {
      public: ['93.184.215.14', '2606:4700::1111'],
      private: ['127.0.0.1', '::1', '172.31.255.255', '100.64.0.1'],
      forbidden: [
        '169.254.169.254',
        '::ffff:10.0.0.1',
        '::ffff:8.8.8.8',
        '64:ff9b::a00:1',
        '::',
        'ff02::1',
        'not an address',
        // IPv4-translated (SIIT), Teredo, the 6to4 relay anycast, IPv6 documentation, SRv6 SIDs.
        '::ffff:0:a00:1',
        '2001:0:4136:e378:8000:63bf:3fff:fdd2',
        '192.88.99.1',
        '3fff::1',
        '5f00::1',
      ],
    }
    for (const [kind, addresses] of Object.entries(expected)) {
      for (const address of addresses) expect(classifyAddress(address), address).toBe(kind)
    }
  })

  it('refuses URLs the draft forbids: no path, a fragment, credentials, dot segments, another spelling', async () => {
    const o = https.origin
    await refused(o, dev(), /must have a path/, false)
    await refused(`${o}/`, dev(), /must have a path/, false)
    await refused(`${o}/client.json#frag`, dev(), /fragment/, false)
    await refused(`https://user:pw@127.0.0.1:${new URL(o).port}/client.json`, dev(), /user name or password/, false)
    await refused(`${o}/a/../client.json`, dev(), /\. or \.\. path segments/, false)
    await refused(`${o}/a/%2E%2e/client.json`, dev(), /\. or \.\. path segments/, false)
    await refused(`${o}/./client.json`, dev(), /\. or \.\. path segments/, false)
    await refused(`https://LOCALHOST:${new URL(o).port}/client.json`, dev(), /normal form/, false)
    await refused(`ftp://127.0.0.1/client.json`, dev(), /must use https/, false)
    await refused(`${o}/${'x'.repeat(260)}`, dev(), /longer than 256/, false)
    expect(https.connections).toBe(0)
  })

  it('refuses a blocked host, and a host outside a non-empty allow list', async () => {
    const url = https.document('/client.json')
    await refused(url, { ...dev(), hosts: { allowed: [], blocked: ['127.0.0.1'] } }, /not allowed/, false)
    await refused(url, { ...dev(), hosts: { allowed: ['*.assistant.example'], blocked: [] } }, /not allowed/, false)
    expect(https.connections).toBe(0)
    expect(await fetchClientMetadata(url, { ...dev(), hosts: { allowed: ['127.0.0.1'], blocked: [] } })).toMatchObject({ ok: true })
  })

  it('refuses a host name ending in a dot, which would be a second spelling past the host rules', async () => {
    const port = new URL(https.origin).port
    https.document('/dotted.json')
    const blocked = (rule: string) => ({ ...dev(), hosts: { allowed: [], blocked: [rule] } })
    await refused(`https://localhost.:${port}/dotted.json`, blocked('localhost'), /must not end with a dot after the host name/, false)
    await refused('https://a.example.com./client.json', blocked('*.example.com'), /must not end with a dot after the host name/, false)
    await refused(`https://localhost.:${port}/dotted.json`, dev(), /must not end with a dot after the host name/, false)
    expect(https.connections).toBe(0)
    // Nor does a row stored with one before this rule name a client at the token endpoint.
    expect(clientIdKnown(`https://localhost.:${port}/dotted.json`, dev().hosts)).toBe(false)
    expect(clientIdKnown(`https://localhost:${port}/dotted.json`, dev().hosts)).toBe(true)
  })

  it('matches host rules exactly or under a *.suffix, a block winning', () => {
    const rules = { allowed: ['*.example.com', 'solo.test'], blocked: ['bad.example.com'] }
    expect(hostPermitted('a.example.com', rules)).toBe(true)
    expect(hostPermitted('a.b.example.com', rules)).toBe(true)
    expect(hostPermitted('example.com', rules)).toBe(false)
    expect(hostPermitted('evilexample.com', rules)).toBe(false)
    expect(hostPermitted('solo.test', rules)).toBe(true)
    expect(hostPermitted('x.solo.test', rules)).toBe(false)
    expect(hostPermitted('bad.example.com', rules)).toBe(false)
  })
})

describe('refused after the connection', () => {
  it('refuses a redirect and does not follow it', async () => {
    const target = https.document('/client.json')
    https.route('/moved', { status: 302, headers: { location: target } })
    await refused(`${https.origin}/moved`, dev(), /redirect \(302\); redirects are not followed/, true)
    expect(https.requests.get('/client.json')).toBeUndefined()
  })

  it('refuses a document larger than the limit, declared or streamed', async () => {
    const url = https.document('/big.json', { client_name: 'x'.repeat(90), padding: 'y'.repeat(10_000) })
    await refused(url, dev(), /larger than 5120 bytes/, true)
    https.route('/chunked.json', (origin) => ({
      chunked: true,
      body: JSON.stringify({ client_id: `${origin}/chunked.json`, padding: 'z'.repeat(8_000) }),
    }))
    await refused(`${https.origin}/chunked.json`, { ...dev(), maxBytes: 1_000 }, /larger than 1000 bytes/, true)
  })

  it('refuses a document that does not arrive in time', async () => {
    https.route('/slow.json', { hang: true })
    await refused(`${https.origin}/slow.json`, { ...dev(), timeoutMs: 200 }, /did not arrive within 200 ms/, true)
  })

  it('refuses a document whose client_id is not its URL', async () => {
    const url = https.document('/other.json', { client_id: `${https.origin}/client.json` })
    await refused(url, dev(), /client_id is not its URL/, true)
  })

  it('refuses what is not JSON, not 200, or not a public client with valid redirect URIs', async () => {
    https.route('/text', { headers: { 'content-type': 'text/html' }, body: '<html></html>' })
    await refused(`${https.origin}/text`, dev(), /not served as application\/json/, true)
    https.route('/gone', { status: 404 })
    await refused(`${https.origin}/gone`, dev(), /answered 404/, true)
    https.route('/broken', { body: '{"client_id": ' })
    await refused(`${https.origin}/broken`, dev(), /not JSON/, true)
    await refused(https.document('/secret', { token_endpoint_auth_method: 'client_secret_basic' }), dev(), /must be none/, true)
    await refused(https.document('/jwt', { token_endpoint_auth_method: 'private_key_jwt' }), dev(), /must be none/, true)
    await refused(https.document('/with-secret', { client_secret: 'shh' }), dev(), /must not contain a client secret/, true)
    await refused(https.document('/no-uris', { redirect_uris: [] }), dev(), /redirect_uris must list/, true)
    await refused(
      https.document('/js', { redirect_uris: ['javascript:alert(1)'] }),
      dev(),
      /redirect URI .* must not use the javascript: scheme/,
      true,
    )
    await refused(https.document('/plain-http', { redirect_uris: ['http://attacker.example/cb'] }), dev(), /must use https/, true)
    await refused(https.document('/implicit', { response_types: ['token'] }), dev(), /response_types may list only code/, true)
  })
})

describe('the cache', () => {
  const settings = () => ({ ...dev(), maxCacheSeconds: 600 })

  it('reuses a document for its max-age, then fetches it again', async () => {
    const clock = manualClock()
    const resolver = new ClientMetadataResolver(settings(), clock)
    const url = https.document('/aged.json')
    https.route('/aged.json', (origin) => ({
      headers: { 'cache-control': 'public, max-age=120' },
      body: { client_id: `${origin}/aged.json`, redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'none' },
    }))
    expect(await resolver.resolve(url)).toMatchObject({ ok: true, fresh: true })
    clock.advance(119_000)
    expect(await resolver.resolve(url)).toMatchObject({ ok: true, fresh: false })
    expect(https.requests.get('/aged.json')).toBe(1)
    clock.advance(2_000)
    expect(await resolver.resolve(url)).toMatchObject({ ok: true, fresh: true })
    expect(https.requests.get('/aged.json')).toBe(2)
  })

  it('holds max-age within the minimum and the operator maximum', async () => {
    const clock = manualClock()
    const resolver = new ClientMetadataResolver(settings(), clock)
    const long = https.document('/long.json')
    const never = https.document('/never.json')
    https.route('/long.json', (origin) => ({
      headers: { 'cache-control': 'max-age=31536000' },
      body: { client_id: `${origin}/long.json`, redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'none' },
    }))
    https.route('/never.json', (origin) => ({
      headers: { 'cache-control': 'no-store' },
      body: { client_id: `${origin}/never.json`, redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'none' },
    }))
    await resolver.resolve(long)
    await resolver.resolve(never)
    clock.advance(59_000)
    await resolver.resolve(never)
    expect(https.requests.get('/never.json')).toBe(1)
    clock.advance(2_000)
    await resolver.resolve(never)
    expect(https.requests.get('/never.json')).toBe(2)
    clock.advance(600_000 - 61_000 - 1)
    await resolver.resolve(long)
    expect(https.requests.get('/long.json')).toBe(1)
    clock.advance(1)
    await resolver.resolve(long)
    expect(https.requests.get('/long.json')).toBe(2)
  })

  it('fetches at most MAX_CONCURRENT_FETCHES documents at once, MAX_CONCURRENT_FETCHES_PER_HOST from one host, refusing beyond without remembering', async () => {
    // The silent servers' fetches end at this timeout, a real one of the fetch; long enough that
    // the documents fetched meanwhile over TLS arrive within it on a loaded machine.
    const resolver = new ClientMetadataResolver({ ...settings(), timeoutMs: 3_000 }, manualClock())
    const hosts = MAX_CONCURRENT_FETCHES / MAX_CONCURRENT_FETCHES_PER_HOST
    const silent = await Promise.all(Array.from({ length: hosts + 1 }, (_, i) => silentServer(`127.0.0.${i + 2}`)))
    try {
      const stuck = (server: { origin: string }, i: number) => resolver.resolve(`${server.origin}/stuck-${i}.json`)
      // Slow documents on one host hold that host's share only: a document elsewhere is fetched meanwhile.
      const slow = Array.from({ length: MAX_CONCURRENT_FETCHES_PER_HOST }, (_, i) => stuck(silent[0]!, i))
      expect(await stuck(silent[0]!, 99)).toMatchObject({ ok: false, fresh: false, reason: expect.stringMatching(/from this host/) })
      expect(await resolver.resolve(https.document('/meanwhile.json'))).toMatchObject({ ok: true, fresh: true })
      // Slow documents on enough hosts fill the whole bound.
      for (const server of silent.slice(1, hosts)) {
        for (let i = 0; i < MAX_CONCURRENT_FETCHES_PER_HOST; i++) slow.push(stuck(server, i))
      }
      expect(slow).toHaveLength(MAX_CONCURRENT_FETCHES)
      expect(await stuck(silent[hosts]!, 0)).toMatchObject({ ok: false, fresh: false, reason: expect.stringMatching(/at once/) })
      const url = https.document('/waiting.json')
      expect(await resolver.resolve(url)).toMatchObject({ ok: false, fresh: false, reason: expect.stringMatching(/too many/) })
      expect(https.requests.get('/waiting.json')).toBeUndefined()
      expect((await Promise.all(slow)).map((r) => r.ok)).toEqual(Array(MAX_CONCURRENT_FETCHES).fill(false))
      expect(await resolver.resolve(url)).toMatchObject({ ok: true, fresh: true })
    } finally {
      await Promise.all(silent.map((server) => server.close()))
    }
  })

  it('remembers a refusal for a minute, and shares one fetch among concurrent requests', async () => {
    const clock = manualClock()
    const resolver = new ClientMetadataResolver(settings(), clock)
    const bad = https.document('/mismatch.json', { client_id: 'https://elsewhere.example/client.json' })
    const both = await Promise.all([resolver.resolve(bad), resolver.resolve(bad)])
    expect(both.map((r) => r.ok)).toEqual([false, false])
    expect(both.filter((r) => r.fresh)).toHaveLength(1)
    clock.advance(59_000)
    expect(await resolver.resolve(bad)).toMatchObject({ ok: false, fresh: false })
    expect(https.requests.get('/mismatch.json')).toBe(1)
    clock.advance(2_000)
    expect(await resolver.resolve(bad)).toMatchObject({ ok: false, fresh: true })
    expect(https.requests.get('/mismatch.json')).toBe(2)
  })
})
