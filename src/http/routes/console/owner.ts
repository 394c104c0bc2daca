import type { FastifyRequest } from 'fastify'

/** The logged-in user's id; the console's requireUser hook has already turned everyone else away. */
export function ownerId(request: FastifyRequest): string {
  if (!request.user) throw new Error('console route reached without a user')
  return request.user.id
}
