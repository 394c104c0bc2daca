import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * The names render() adds to every page: the logged-in person for the header menu (`viewer`)
 * and a CSRF token (the log-out form is on every page). A page's own data never uses them, so
 * a page about a user (/admin/users/:id) cannot be overwritten by whoever is looking at it.
 */
const RESERVED = ['viewer', 'csrfToken'] as const
type Reserved = (typeof RESERVED)[number]

export type PageData = { title: string } & { [K in Reserved]?: never } & Record<string, unknown>

/**
 * Renders a page inside the layout with what every page needs. Pages carrying a CSRF token or
 * a secret must not be cached (RFC 9700 4.16 is about framing; caching is plain hygiene).
 */
export async function render(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: PageData,
  status = 200,
): Promise<FastifyReply> {
  for (const name of RESERVED) {
    if (Object.hasOwn(data, name)) throw new Error(`page data for ${template} must not set '${name}': render() sets it`)
  }
  const csrfToken = reply.generateCsrf()
  reply.header('cache-control', 'no-store').code(status).type('text/html; charset=utf-8')
  const html = await reply.viewAsync(template, { ...data, viewer: request.user ?? null, csrfToken })
  return reply.send(html)
}
