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

/** Request ids: taken from X-Request-Id when a proxy set one, else a new UUID. */
export const requestIdOptions: Pick<FastifyServerOptions, 'genReqId' | 'requestIdHeader'> = {
  requestIdHeader: 'x-request-id',
  genReqId: () => randomUUID(),
}
