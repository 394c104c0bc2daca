import type { FastifyRequest } from 'fastify'
import type { Owner } from '../../../console/index.js'
import { actorOf } from '../../audit.js'

/** The logged-in owner the console acts for (src/console/use-cases.ts); requireUser has turned everyone else away. */
export function ownerOf(request: FastifyRequest): Owner {
  if (!request.user) throw new Error('console route reached without a user')
  return { ...actorOf(request), userId: request.user.id, emailVerified: request.user.emailVerified }
}
