import { randomUUID } from 'node:crypto'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyServerOptions } from 'fastify'
import type { TrustProxy } from '../config.js'

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
