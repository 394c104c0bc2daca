import type { FastifyContextConfig, FastifyInstance, RouteOptions, preHandlerHookHandler } from 'fastify'

/** A module of routes: what `app.register` would take, called on the caller's context instead. */
export type RouteModule<D> = (app: FastifyInstance, deps: D) => Promise<void>

/**
 * Adds route modules to `app`'s own plugin context instead of registering each as a plugin.
 * Fastify gives every plugin context Request and Reply classes of its own, and V8 gives the
 * objects of each class their own hidden class: Fastify's per-request functions, and Gatehouse's
 * own hooks, then see one shape per context that has served a request, and past four their
 * property lookups go megamorphic (docs/scaling.md "Plugin contexts"). So Gatehouse has four
 * contexts, the root, the OAuth API, the resource API and the pages; a group of routes that
 * shares hooks or an error handler within one of them is a `routeScope`, not a context.
 */
export async function addRoutes<D>(app: FastifyInstance, deps: D, ...modules: RouteModule<D>[]): Promise<void> {
  for (const routes of modules) await routes(app, deps)
}

/** What a group of routes shares, as a plugin context's hooks and error handler would give it. */
export interface RouteScope {
  /** Run before each route's own preHandler hooks, where a context's preHandler hooks run. */
  preHandler?: preHandlerHookHandler[]
  /** Each route's error handler; as one set on a context, it passes what it throws to the context's. */
  errorHandler?: RouteOptions['errorHandler']
  /**
   * Each route's config, under what the route sets itself: what the context's hooks read of the
   * route, as the second-factor policy reads its area (src/http/second-factor-gate.ts).
   */
  config?: FastifyContextConfig
}

const SHORTHANDS = new Set<string | symbol>(['delete', 'get', 'head', 'patch', 'post', 'put', 'options', 'all'])
/** What would change the context itself, and so reach beyond the scope's routes. */
const CONTEXT_WIDE = new Set<string | symbol>(['addHook', 'register', 'setErrorHandler', 'setNotFoundHandler', 'addContentTypeParser'])

/**
 * `app` as a group of routes sees it: every route added through the result gets the scope's
 * preHandler hooks before its own, and the scope's error handler unless it sets one, while it
 * stays in `app`'s plugin context (see `addRoutes` for why). Anything that would change the
 * context itself throws instead of reaching routes outside the scope.
 */
export function routeScope(app: FastifyInstance, scope: RouteScope): FastifyInstance {
  const scoped = (options: Partial<RouteOptions>): Partial<RouteOptions> => {
    const own = [options.preHandler ?? []].flat()
    const preHandler = [...(scope.preHandler ?? []), ...own]
    return {
      ...options,
      ...(preHandler.length > 0 && { preHandler }),
      ...(scope.config !== undefined && { config: { ...scope.config, ...options.config } }),
      ...(options.errorHandler === undefined && scope.errorHandler !== undefined && { errorHandler: scope.errorHandler }),
    }
  }
  const routes = app as unknown as Record<string, (...args: unknown[]) => unknown>
  return new Proxy(app, {
    get(target, key) {
      if (key === 'route') return (options: RouteOptions) => target.route(scoped(options) as RouteOptions)
      if (typeof key === 'string' && SHORTHANDS.has(key)) {
        return (url: string, options: unknown, handler?: unknown) =>
          typeof options === 'function'
            ? routes[key]!.call(target, url, scoped({}), options)
            : routes[key]!.call(target, url, scoped((options ?? {}) as Partial<RouteOptions>), handler)
      }
      if (CONTEXT_WIDE.has(key)) throw new Error(`${String(key)} in a route scope would reach beyond its routes`)
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}
