import { randomUUID } from 'node:crypto'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import type { TrustProxy } from '../config.js'

/** A request id from a proxy is used only if it is a plain token: printable ASCII, no spaces, at most 128 characters. */
const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/

/**
 * Request ids are the server's own (a new UUID). From a trusted proxy (TRUST_PROXY), the
 * proxy's `X-Request-Id` is used instead, so one id follows the request through both logs; but
 * only when it is sane, since it is echoed in a response header and written to every log line of
 * the request. From any other peer the header is the client's word, and a client could make its
 * requests look like someone else's in the logs: the peer is checked with the same rule Fastify
 * uses for X-Forwarded-For (@fastify/proxy-addr), not merely whether some proxy is configured.
 */
export function requestIdOptions(trustProxy: TrustProxy): Pick<FastifyServerOptions, 'genReqId' | 'requestIdHeader'> {
  // Without TRUST_PROXY no peer is a proxy, and the socket's address is not even read.
  const fromProxy: ((peer: string) => boolean) | undefined =
    trustProxy === false
      ? undefined
      : typeof trustProxy === 'number'
        ? () => trustProxy > 0
        : (
            (trusted) => (peer: string) =>
              trusted(peer, 0)
          )(proxyAddr.compile([...trustProxy]))
  return {
    requestIdHeader: false,
    genReqId: (req) => {
      const given = fromProxy?.(req.socket.remoteAddress ?? '') ? req.headers['x-request-id'] : undefined
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
    },
  }
}

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
/** A pino logger: Fastify's logger type omits the level check the lazy child needs. */
export type LevelAware = FastifyBaseLogger & { isLevelEnabled(level: string): boolean }

/**
 * A request's logger that becomes pino's child (bound to the request id) on the request's first
 * line that its level lets through. Fastify makes the child eagerly for every request, and pino
 * serialises and redacts a child's bindings when it is made (its measured cost is in README "Instructions per
 * request"), although at the default level a request that succeeds writes no line at all.
 */
class LazyRequestLogger {
  #child: FastifyBaseLogger | undefined
  readonly #parent: LevelAware
  readonly #bindings: Bindings
  readonly #options: ChildOptions

  constructor(parent: LevelAware, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level
  }

  set level(level: string) {
    this.#made().level = level
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#made().child(bindings, options)
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args)
  }
  error(...args: unknown[]): void {
    this.#write('error', args)
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args)
  }
  info(...args: unknown[]): void {
    this.#write('info', args)
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args)
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args)
  }
  silent(): void {}

  #made(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options)
    return this.#child
  }

  #write(method: LogMethod, args: unknown[]): void {
    if (this.#child === undefined && !this.#parent.isLevelEnabled(method)) return
    ;(this.#made()[method] as (...a: unknown[]) => void)(...args)
  }
}

/** The request id's name in a log line: Fastify's default (`requestIdLogLabel`), which the bound loggers use too. */
const REQUEST_ID_LABEL = 'reqId'

export interface RequestLogging {
  fastifyOptions: Pick<FastifyServerOptions, 'loggerInstance' | 'childLoggerFactory'>
  /** Sets a request's logger where Fastify has made none. */
  bind(request: FastifyRequest, reply: FastifyReply): void
}

/**
 * How each request gets its logger, decided once from the level: Fastify's logger options, and
 * what the first onRequest hook and the router's refusals (which run no hooks) call on every
 * request. Fastify writes two lines per request at `info` ("incoming request", "request
 * completed"), and for the second it listens for every response's `finish` and `error` events
 * whether or not the level lets the line through (counted in README "Instructions per request"). At `info` and below Fastify holds
 * the log and makes each request's lazy child through `lazyChildLogger`; `bind` does nothing.
 * Above `info` those lines are never written, so Fastify gets no logger of its own and sets up no
 * listeners. It gets no child-logger factory either: Fastify checks the seven methods of every
 * child a factory other than its own makes, at every request (`validateLogger`, fourteen
 * megamorphic property lookups and two arrays; docs/scaling.md "The read paths' ceilings").
 * `bind` sets the lazy child on `request.log` and `reply.log` instead, where Fastify has put its
 * silent logger, so every line that a route, an error handler or Fastify writes through them is
 * written as before. What goes is Fastify's own "request errored" line for a response stream
 * that failed after its handler had answered, which has no level of its own to keep it.
 */
export function requestLogging(log: LevelAware): RequestLogging {
  if (log.isLevelEnabled('info')) return { fastifyOptions: { loggerInstance: log, childLoggerFactory: lazyChildLogger }, bind: () => {} }
  return {
    fastifyOptions: {},
    bind(request, reply) {
      const child = new LazyRequestLogger(log, { [REQUEST_ID_LABEL]: request.id }, {}) as unknown as FastifyBaseLogger
      request.log = child
      reply.log = child
    },
  }
}

/**
 * Fastify's `childLoggerFactory`: the lazy child above when the child keeps its parent's level;
 * pino's own child, made at once, when a route sets a level of its own (`logLevel`) or the
 * logger cannot say which levels it writes.
 */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) => {
  const levelAware = typeof (logger as Partial<LevelAware>).isLevelEnabled === 'function'
  if (!levelAware || options.level !== undefined) return logger.child(bindings, options)
  return new LazyRequestLogger(logger as LevelAware, bindings, options) as unknown as FastifyBaseLogger
}
