import type { FastifyInstance } from 'fastify'
import type { Services } from '../../../services.js'
import { checkedParams } from '../../../oauth/index.js'
import { noStore, provideNonce } from './json-errors.js'

/** POST /oauth/par (RFC 9126 2): the parameters in the form body, the client authenticated as at the token endpoint. */
export default async function parRoutes(app: FastifyInstance, { oauth }: Services): Promise<void> {
  app.post('/oauth/par', async (request, reply) => {
    // RFC 9449 §10.1: a proof binds the pushed request's code to its key.
    const header = request.headers.dpop
    const dpop = header === undefined ? undefined : await oauth.checkDpop(header, 'POST', '/oauth/par')
    const { params, resources } = checkedParams(request.body)
    const response = await oauth.pushAuthorizationRequest(params, request.headers.authorization, dpop, resources)
    if (dpop !== undefined) await provideNonce(oauth, reply)
    return noStore(reply).code(201).send(response)
  })
}
