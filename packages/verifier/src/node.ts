import type { IncomingMessage, ServerResponse } from 'node:http'
import { failureBody, failureHeaders } from './bearer.js'
import type { Verifier } from './core.js'
import type { ResourceRequest, VerifiedToken, VerifyFailure } from './types.js'

/*
 * The node:http adapter, and through it Express, Connect and anything else built on
 * `(req, res, next)`. Nothing but node:http types is imported.
 */

/** Answers a refused request: status, RFC 6750 3 or RFC 9449 §7.1 challenge, JSON body. */
export function sendFailure(res: ServerResponse, failure: VerifyFailure): void {
  const headers: Record<string, string> = { 'cache-control': 'no-store', ...failureHeaders(failure) }
  const body = failureBody(failure)
  if (body === undefined) {
    res.writeHead(failure.status, headers).end()
    return
  }
  headers['content-type'] = 'application/json; charset=utf-8'
  res.writeHead(failure.status, headers).end(JSON.stringify(body))
}

/**
 * What the verifier reads of a request. Express rewrites `req.url` under a mounted router and
 * keeps the original in `originalUrl`; the origin is the Host header's, unless the verifier has
 * a `publicOrigin` (set it behind a proxy).
 */
function presented(req: IncomingMessage): ResourceRequest {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true
  return {
    authorization: req.headers.authorization,
    dpop: req.headers.dpop,
    method: req.method ?? 'GET',
    url: (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/',
    origin: req.headers.host === undefined ? undefined : `${secure ? 'https' : 'http'}://${req.headers.host}`,
  }
}

/**
 * For a plain node:http handler: the request's verified token, or undefined after the refusal
 * (401, 403 or 503) has been sent.
 *
 *   const token = await authenticateRequest(verifier, req, res, 'read')
 *   if (!token) return
 */
export async function authenticateRequest(
  verifier: Verifier,
  req: IncomingMessage,
  res: ServerResponse,
  requiredScope?: string,
): Promise<VerifiedToken | undefined> {
  const { authorization, dpop } = req.headers
  const result =
    verifier.verifyRequestCached(authorization, dpop, requiredScope) ?? (await verifier.verifyRequest(presented(req), requiredScope))
  if (result.ok) return result.token
  sendFailure(res, result)
  return undefined
}

export type RequestWithToken = IncomingMessage & { accessToken?: VerifiedToken }

/**
 * Express / Connect middleware: sets `req.accessToken` and calls `next()`, or answers the
 * refusal itself.
 *
 *   app.get('/me', requireToken(verifier, 'read'), (req, res) => res.json(req.accessToken))
 */
export function requireToken(verifier: Verifier, requiredScope?: string) {
  verifier.assertKnownScope(requiredScope)
  return (req: RequestWithToken, res: ServerResponse, next: (err?: unknown) => void): void => {
    authenticateRequest(verifier, req, res, requiredScope).then((token) => {
      if (token === undefined) return
      req.accessToken = token
      next()
    }, next)
  }
}
