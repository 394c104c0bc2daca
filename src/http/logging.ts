import { randomUUID } from 'node:crypto'
import type { FastifyServerOptions } from 'fastify'
import type { LoggerOptions } from 'pino'

/** Parameters whose values never reach a log line, wherever they appear in a URL. */
const SECRET_PARAMS = /([?&](?:client_secret|code|code_verifier|token|access_token|password|state|_csrf)=)[^&#]*/gi

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[REDACTED]')
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
 * Request ids are the server's own (a new UUID). Behind a trusted proxy (TRUST_PROXY), the
 * proxy's `X-Request-Id` is used instead, so one id follows the request through both logs; but
 * only when it is sane, since it is echoed in a response header and written to every log line of
 * the request. Without a proxy the header is the client's word, and a client could make its
 * requests look like someone else's in the logs.
 */
export function requestIdOptions(trustProxy: boolean): Pick<FastifyServerOptions, 'genReqId' | 'requestIdHeader'> {
  return {
    requestIdHeader: false,
    genReqId: (req) => {
      const given = trustProxy ? req.headers['x-request-id'] : undefined
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
    },
  }
}
