import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Renders a page inside the layout with what every page needs: the user for the header menu
 * and a CSRF token (the log-out form is on every page). Pages carrying a CSRF token or a secret
 * must not be cached (RFC 9700 4.16 is about framing; caching is plain hygiene).
 */
export async function render(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: { title: string } & Record<string, unknown>,
  status = 200,
): Promise<FastifyReply> {
  const csrfToken = reply.generateCsrf()
  reply.header('cache-control', 'no-store').code(status).type('text/html; charset=utf-8')
  const html = await reply.viewAsync(template, { ...data, user: request.user ?? null, csrfToken })
  return reply.send(html)
}
