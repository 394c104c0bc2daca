import type { FastifyInstance } from 'fastify'

/** A route's hooks by kind (onRequest, preHandler, onSend…), each the hook functions' names in the order they run. */
export type RouteHooks = Record<string, string[]>

/**
 * Every route of `app` as "METHOD pattern", with its hooks, read from Fastify's
 * `printRoutes({ commonPrefix: false, includeHooks: true })`. Each node of the router's tree is a
 * line, indented four characters a level, with the methods it serves in brackets; a node's
 * pattern is its parent's followed by its own text. A node whose methods differ in their hooks is
 * repeated without the branch characters, once per set of methods, and each set is followed by
 * its hooks: `• (onRequest) ["name()", …]`, an unnamed function being `anonymous()`.
 *
 * The text is Fastify's, not an API: a parse that finds nothing throws, so that no test passes by
 * checking no routes.
 */
export function routeTree(app: FastifyInstance): Map<string, RouteHooks> {
  const routes = new Map<string, RouteHooks>()
  const patterns: string[] = []
  let current: RouteHooks[] = []
  for (const line of app.printRoutes({ commonPrefix: false, includeHooks: true }).split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    const again = /^((?:[│ ] {3})*)([^•│├└ ].*?) \(([A-Z, ]+)\)$/.exec(line)
    const hook = /^[│ ]*• \((\w+)\) (\[.*\])$/.exec(line)
    if (node) {
      const depth = node[1]!.length / 4
      patterns.length = depth
      patterns.push(`${patterns[depth - 1] ?? ''}${node[2]}`)
    }
    const methods = (node ?? again)?.[3]
    if (node || again) {
      current = (methods?.split(', ') ?? []).map((method) => {
        const hooks: RouteHooks = {}
        routes.set(`${method} ${patterns[patterns.length - 1]}`, hooks)
        return hooks
      })
    } else if (hook) {
      const names = (JSON.parse(hook[2]!) as string[]).map((name) => name.replace(/\(\)$/, ''))
      for (const hooks of current) hooks[hook[1]!] = names
    }
  }
  if (!routes.has('POST /oauth/token') || !routes.has('GET /applications/:id') || routes.size < 50) {
    throw new Error(`the route tree did not parse: ${JSON.stringify([...routes.keys()])}`)
  }
  return routes
}
