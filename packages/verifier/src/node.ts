import type { IncomingMessage, ServerResponse } from 'node:http'
import { failureBody, failureHeaders } from './bearer.js'
import type { Verifier } from './core.js'
import { RESOURCE_METADATA_HEADERS, RESOURCE_METADATA_PREFLIGHT_HEADERS } from './resource-metadata.js'
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

/**
 * The verifier's protected-resource metadata (RFC 9728) for node:http and Express: answers GET
 * and HEAD (and a CORS preflight) at `verifier.resourceMetadata.paths` and returns true; for any
 * other request calls `next` when given and returns false. Mount it before the routes that
 * require a token, at the application's root. Throws when the verifier has no `resource`.
 *
 *   app.use(resourceMetadataHandler(verifier))                             // Express
 *   const serveMetadata = resourceMetadataHandler(verifier)               // node:http, once
 *   if (serveMetadata(req, res)) return                                   // in the handler
 */
export function resourceMetadataHandler(verifier: Verifier) {
  const metadata = verifier.resourceMetadata
  if (metadata === undefined)
    throw new RangeError('The verifier has no resource: set its `resource` option to serve protected-resource metadata')
  const body = JSON.stringify(metadata.document)
  const paths = new Set(metadata.paths)
  return (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): boolean => {
    // The path as the client sent it: Express rewrites req.url under a mounted router.
    const target = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'
    const query = target.indexOf('?')
    if (!paths.has(query === -1 ? target : target.slice(0, query))) {
      next?.()
      return false
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      res.writeHead(200, { ...RESOURCE_METADATA_HEADERS, 'content-length': String(Buffer.byteLength(body)) })
      res.end(req.method === 'GET' ? body : undefined)
    } else if (req.method === 'OPTIONS') {
      res.writeHead(204, RESOURCE_METADATA_PREFLIGHT_HEADERS).end()
    } else {
      res.writeHead(405, { allow: 'GET, HEAD, OPTIONS' }).end()
    }
    return true
  }
}
