import { lookup as dnsLookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
// The system's trust store as Node has it, so an extra CA adds to it rather than replacing it.
import { rootCertificates } from 'node:tls'
import { addressAllowed, isLoopbackHost } from './metadata-addresses.js'
import {
  type ClientMetadata,
  type HostRules,
  checkClientIdHost,
  checkClientIdUrl,
  checkClientMetadata,
  maxAgeOf,
} from './metadata-document.js'

/*
 * Fetching a client's metadata document safely (docs/decisions/026-client-metadata-documents.md
 * "Fetch safety"). The URL is a stranger's choice, so every decision that the URL and its
 * addresses alone can make is made before a connection is opened: the URL rules, the operator's
 * host rules, then every address the name resolves to. The connection then goes to the address
 * that was vetted, never to a second lookup's answer (DNS rebinding). Nothing is followed: a
 * redirect is a refusal. The body is bounded while it streams and the whole exchange by a timer.
 */

export interface MetadataFetchSettings {
  /** CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES: loopback and private addresses, and http to loopback (development only). */
  readonly allowPrivateAddresses: boolean
  readonly hosts: HostRules
  /** CLIENT_ID_METADATA_FETCH_TIMEOUT_MS: the whole exchange, from the lookup to the last byte. */
  readonly timeoutMs: number
  /** CLIENT_ID_METADATA_MAX_BYTES: the largest document accepted. */
  readonly maxBytes: number
  /** CLIENT_ID_METADATA_EXTRA_CA_FILE's certificates (PEM), trusted for these fetches besides the system's: development. */
  readonly extraCa: string | undefined
}

export type FetchOutcome =
  | { ok: true; metadata: ClientMetadata; maxAgeSeconds: number | undefined }
  | {
      ok: false
      reason: string
      /** Whether a connection was attempted: false when the URL or its addresses alone decided. */
      connected: boolean
    }

class Refusal extends Error {}

/** Resolves `host` to every address it has, or the literal itself. */
async function addressesOf(host: string): Promise<{ address: string; family: number }[]> {
  const family = isIP(host)
  if (family !== 0) return [{ address: host, family }]
  return dnsLookup(host, { all: true, verbatim: true })
}

/** A net `lookup` that answers the vetted address whatever it is asked, in both of its calling forms. */
function pinned(address: string, family: number): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }])
    else callback(null, address, family)
  }) as unknown as LookupFunction
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/** Fetches and checks the document at `clientId`. Never throws: every failure is a reason. */
export async function fetchClientMetadata(clientId: string, settings: MetadataFetchSettings): Promise<FetchOutcome> {
  const checked = checkClientIdUrl(clientId, isLoopbackHost, settings.allowPrivateAddresses)
  if (!checked.ok) return { ok: false, reason: `the client_id ${checked.reason}`, connected: false }
  const url = checked.value
  const ruled = checkClientIdHost(url, settings.hosts)
  if (!ruled.ok) return { ok: false, reason: ruled.reason, connected: false }
  const host = ruled.value

  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), settings.timeoutMs)
  let connected = false
  let response: IncomingMessage | undefined
  try {
    let addresses: { address: string; family: number }[]
    try {
      addresses = await Promise.race([addressesOf(host), aborted(controller.signal)])
    } catch (err) {
      if (err instanceof Refusal) throw err
      throw new Refusal(`the host ${host} could not be resolved`)
    }
    if (addresses.length === 0) throw new Refusal(`the host ${host} could not be resolved`)
    // Every address, not just the first: a name with one public and one private address would otherwise depend on luck.
    const refused = addresses.find((a) => !addressAllowed(a.address, settings.allowPrivateAddresses))
    if (refused !== undefined) throw new Refusal(`the host ${host} has an address this server does not connect to (${refused.address})`)
    const target = addresses[0]!
    connected = true
    response = await get(url, target, settings, controller.signal)
    const status = response.statusCode ?? 0
    if (status >= 300 && status < 400)
      throw new Refusal(`the document’s server answered with a redirect (${status}); redirects are not followed`)
    if (status !== 200) throw new Refusal(`the document’s server answered ${status}`)
    const type = response.headers['content-type'] ?? ''
    if (!JSON_TYPE.test(type)) throw new Refusal('the document is not served as application/json')
    const declared = Number(response.headers['content-length'] ?? NaN)
    if (declared > settings.maxBytes) throw new Refusal(`the document is larger than ${settings.maxBytes} bytes`)
    const body = await readBounded(response, settings.maxBytes, controller.signal)
    let doc: unknown
    try {
      doc = JSON.parse(body.toString('utf8'))
    } catch {
      throw new Refusal('the document is not JSON')
    }
    const metadata = checkClientMetadata(clientId, doc)
    if (!metadata.ok) throw new Refusal(metadata.reason)
    return { ok: true, metadata: metadata.value, maxAgeSeconds: maxAgeOf(headerOf(response, 'cache-control')) }
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, reason: err.message, connected }
    if (controller.signal.aborted) return { ok: false, reason: `the document did not arrive within ${settings.timeoutMs} ms`, connected }
    return { ok: false, reason: 'the document could not be fetched', connected }
  } finally {
    clearTimeout(timer)
    // Whatever was not read (a redirect's body, a refused document's rest) is dropped with its connection.
    response?.destroy()
  }
}

function headerOf(response: IncomingMessage, name: string): string | undefined {
  const v = response.headers[name]
  return Array.isArray(v) ? v.join(', ') : v
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new Refusal('the host name did not resolve in time'))
    if (signal.aborted) fail()
    else signal.addEventListener('abort', fail, { once: true })
  })
}

function get(
  url: URL,
  target: { address: string; family: number },
  settings: MetadataFetchSettings,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const options = {
      method: 'GET',
      // A connection of its own each time: a pooled one could have been opened to another address.
      agent: false as const,
      lookup: pinned(target.address, target.family),
      signal,
      headers: { accept: 'application/json', 'user-agent': 'Gatehouse (client metadata)' },
    }
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ...(settings.extraCa === undefined ? {} : { ca: [...rootCertificates, settings.extraCa] }) })
        : httpRequest(url, options)
    req.once('response', resolve)
    // `on`, not `once`: a request may fail twice (aborted, then reset), and an unheard error would end the process.
    req.on('error', reject)
    req.end()
  })
}

function readBounded(response: IncomingMessage, max: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    response.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        // Refused first: destroying the response emits `aborted` at once, which must not be the reason.
        reject(new Refusal(`the document is larger than ${max} bytes`))
        response.destroy()
        return
      }
      chunks.push(chunk)
    })
    response.once('end', () => resolve(Buffer.concat(chunks)))
    response.on('error', reject)
    response.once('aborted', () => reject(new Error('aborted')))
    signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
  })
}
