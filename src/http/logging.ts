import { randomUUID } from 'node:crypto'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyServerOptions } from 'fastify'
import type { LoggerOptions } from 'pino'
import type { TrustProxy } from '../config.js'

/** Parameters whose values never reach a log line, wherever they appear in a URL. */
const SECRET_PARAMS = new Set(['client_secret', 'code', 'code_verifier', 'token', 'access_token', 'password', 'state', '_csrf'])

/**
 * A query key as a parser may understand it: `+` is a space and %XX a byte (HTML's
 * application/x-www-form-urlencoded parsing, which Fastify's query parser follows), decoded until
 * nothing changes so that a proxy that decodes once more cannot turn a harmless-looking key into a
 * secret one; compared without case and surrounding spaces. Byte by byte rather than
 * decodeURIComponent, which throws on malformed input: every secret name is ASCII.
 */
function normalisedKey(raw: string): string {
  let key = raw.replace(/\+/g, ' ')
  for (let i = 0; i < 4; i++) {
    const decoded = key.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    if (decoded === key) break
    key = decoded
  }
  return key.trim().toLowerCase()
}

/**
 * The URL with the value of every secret-bearing query parameter replaced by [REDACTED]. Keys are
 * compared decoded (`client%5Fsecret` is `client_secret` to the server) and without case
 * (`Client_Secret` is not a parameter Gatehouse reads, but it is plainly a secret). Pairs are split
 * at `&`, and also at `;` and `#`, which some parsers treat as separators: redacting too much in a
 * log line costs nothing, too little leaks a credential.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const parts = url.slice(q + 1).split(/([&;#])/)
  for (let i = 0; i < parts.length; i += 2) {
    const pair = parts[i]!
    const eq = pair.indexOf('=')
    if (eq >= 0 && SECRET_PARAMS.has(normalisedKey(pair.slice(0, eq)))) parts[i] = `${pair.slice(0, eq)}=[REDACTED]`
  }
  return `${url.slice(0, q)}?${parts.join('')}`
}

/**
 * JSON request logs with a request id. Bodies are never logged; headers that carry secrets
 * are censored and URLs lose the values of secret-bearing query parameters (the token
 * endpoint accepts its parameters in the query string, as the spec's clients send them).
 */
export function pinoOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        '*.client_secret',
        '*.password',
        '*.code',
        '*.token',
        '*.access_token',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      req(req: { method: string; url: string; ip?: string }) {
        return { method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }
      },
    },
  }
}

/** A request id from a proxy is used only if it is a plain token: printable ASCII, no spaces, at most 128 characters. */
const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/**
 * Request ids are the server's own (a new UUID). From a trusted proxy (TRUST_PROXY), the
 * proxy's `X-Request-Id` is used instead, so one id follows the request through both logs; but
 * only when it is sane, since it is echoed in a response header and written to every log line of
 * the request. From any other peer the header is the client's word, and a client could make its
 * requests look like someone else's in the logs: the peer is checked with the same rule Fastify
 * uses for X-Forwarded-For (@fastify/proxy-addr), not merely whether some proxy is configured.
 */
export function requestIdOptions(trustProxy: TrustProxy): Pick<FastifyServerOptions, 'genReqId' | 'requestIdHeader'> {
  // Without TRUST_PROXY no peer is a proxy, and the socket's address is not even read.
  const fromProxy: ((peer: string) => boolean) | undefined =
    trustProxy === false
      ? undefined
      : typeof trustProxy === 'number'
        ? () => trustProxy > 0
        : (
            (trusted) => (peer: string) =>
              trusted(peer, 0)
          )(proxyAddr.compile([...trustProxy]))
  return {
    requestIdHeader: false,
    genReqId: (req) => {
      const given = fromProxy?.(req.socket.remoteAddress ?? '') ? req.headers['x-request-id'] : undefined
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
    },
  }
}
