import type { FastifyInstance, FastifyReply } from 'fastify'
import { type VerifyFailure, bearerToken, dpopToken, failureBody, failureHeaders } from '@gatehouse/verifier/shared'
import { bearerBinding, bearerChallenges, dpopChallenges } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { noStore } from '../oauth/json-errors.js'

const TOKEN_INFO_PATH = '/oauth/token/info'

function refuse(reply: FastifyReply, failure: VerifyFailure) {
  return reply.code(failure.status).headers(failureHeaders(failure)).send(failureBody(failure))
}

/**
 * GET /oauth/token/info: the token asks about itself, in the Authorization header only (RFC 6750
 * 2.1): as Bearer, or bound to a key as DPoP with a proof for this endpoint under the issuer
 * (RFC 9449 §7.1); a bound token as Bearer is refused (§7.2).
 */
export default async function tokenInfoRoute(app: FastifyInstance, { resource }: Pick<Services, 'resource'>): Promise<void> {
  app.get(TOKEN_INFO_PATH, async (request, reply) => {
    noStore(reply)
    const { authorization } = request.headers
    const inHeader = bearerToken(authorization)
    const bound = inHeader === undefined ? dpopToken(authorization) : undefined
    const token = inHeader ?? bound
    // RFC 6750 3.1: no credentials → a bare challenge; a bad token → invalid_token.
    if (token === undefined) return refuse(reply, bearerChallenges.missing)
    const entry = await resource.tokenInfo(token)
    const binding = bound === undefined ? bearerBinding : resource.dpopBinding(request.headers.dpop, request.method, TOKEN_INFO_PATH)
    let failure = entry === null ? (bound === undefined ? bearerChallenges : dpopChallenges).invalid : binding(entry.token, token)
    // A bearer presentation is judged synchronously: the cached path awaits nothing more than before.
    if (failure instanceof Promise) failure = await failure
    if (failure !== undefined) return refuse(reply, failure)
    return reply.type('application/json; charset=utf-8').send(entry!.tokenInfo)
  })
}
