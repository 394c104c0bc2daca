import pg from 'pg'

/** Receives the payload of each notification on the channel. */
export type NotificationHandler = (payload: string) => void

/** Connection-state changes of a LISTEN subscription: caches fall back to their TTL while down. */
export interface ListenEvents {
  onConnected?: () => void
  onDisconnected?: (err?: Error) => void
}

export interface ListenOptions {
  /** How often the idle connection proves it is alive, default 15 s. */
  heartbeatMs?: number
  /** A heartbeat unanswered this long means the connection is dead, default 5 s. */
  heartbeatTimeoutMs?: number
  /** A connection attempt that takes longer than this is abandoned and retried, default 2 s. */
  connectTimeoutMs?: number
}

/** One LISTEN subscription: `stop` ends it, `reconnectNow` retries at once while it is down. */
export interface PgSubscription {
  stop(): Promise<void>
  /**
   * The database answers again (a pool query just succeeded): skip the rest of the backoff.
   * Does nothing while connected or while an attempt is under way.
   */
  reconnectNow(): void
}

/*
 * Retry delays while the connection is down. The cap is low on purpose: revocations must reach
 * this process within a second of the database accepting connections again (docs/operating/backups-and-upgrades.md "Failures
 * and recovery"); one small connection attempt every 250 ms of an outage costs nothing.
 */
const MIN_DELAY_MS = 50
const MAX_DELAY_MS = 250

/**
 * LISTEN on a dedicated connection (a pooled one would lose the subscription when returned).
 * Reconnects with backoff when the connection drops, reporting each state change so that
 * caches can fall back to their TTL bound while notifications may be missed. A connection can
 * also die without a word (a NAT or firewall forgets it, the server host vanishes): TCP
 * keepalive and a periodic `select 1` notice that, so the subscription never stays silently
 * deaf.
 */
export async function listenPg(
  url: string,
  channel: string,
  handler: NotificationHandler,
  events: ListenEvents = {},
  options: ListenOptions = {},
): Promise<() => Promise<void>> {
  const subscription = await subscribePg(url, channel, handler, events, options)
  return () => subscription.stop()
}

/** listenPg, with a way to cut the reconnect backoff short. Resolves once listening. */
export async function subscribePg(
  url: string,
  channel: string,
  handler: NotificationHandler,
  events: ListenEvents = {},
  options: ListenOptions = {},
): Promise<PgSubscription> {
  const subscription = new Subscription(url, channel, handler, events, options)
  await subscription.connect()
  return subscription
}

/**
 * The state of one subscription: at most one client, one connection attempt and one retry timer
 * at a time, so that reconnecting never piles up clients or timers.
 */
class Subscription implements PgSubscription {
  readonly #heartbeatMs: number
  readonly #heartbeatTimeoutMs: number
  readonly #connectTimeoutMs: number
  #stopped = false
  #client: pg.Client | undefined
  #connecting = false
  #retryTimer: NodeJS.Timeout | undefined
  #heartbeat: NodeJS.Timeout | undefined
  #probing = false
  #delay = MIN_DELAY_MS

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly handler: NotificationHandler,
    private readonly events: ListenEvents,
    options: ListenOptions,
  ) {
    this.#heartbeatMs = options.heartbeatMs ?? 15_000
    this.#heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 5_000
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 2_000
  }

  async connect(): Promise<void> {
    const c = new pg.Client({
      connectionString: this.url,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: this.#connectTimeoutMs,
    })
    c.on('notification', (msg) => {
      if (msg.channel === this.channel) this.handler(msg.payload ?? '')
    })
    c.on('error', (err) => this.#dropped(c, err))
    c.on('end', () => this.#dropped(c))
    try {
      await c.connect()
      await c.query(`LISTEN ${pg.escapeIdentifier(this.channel)}`)
    } catch (err) {
      c.end().catch(() => {})
      throw err
    }
    if (this.#stopped) {
      await c.end().catch(() => {})
      return
    }
    this.#client = c
    this.#delay = MIN_DELAY_MS
    this.#heartbeat = setInterval(() => this.#probe(c), this.#heartbeatMs)
    this.#heartbeat.unref()
    this.events.onConnected?.()
  }

  // At most one probe in flight: a stuck connection must not collect one query per interval.
  #probe(c: pg.Client): void {
    if (this.#probing) return
    this.#probing = true
    const timeout = setTimeout(
      () => this.#dropped(c, new Error(`LISTEN connection unresponsive for ${this.#heartbeatTimeoutMs} ms`)),
      this.#heartbeatTimeoutMs,
    )
    timeout.unref()
    const settle = (err?: Error) => {
      this.#probing = false
      clearTimeout(timeout)
      if (err) this.#dropped(c, err)
    }
    c.query('select 1').then(() => settle(), settle)
  }

  #dropped(c: pg.Client, err?: Error): void {
    if (this.#client !== c || this.#stopped) return
    this.#client = undefined
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
    this.events.onDisconnected?.(err)
    c.end().catch(() => {})
    this.#scheduleRetry()
  }

  reconnectNow(): void {
    if (this.#stopped || this.#connecting || this.#client) return
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    this.#connecting = true
    this.connect().then(
      () => {
        this.#connecting = false
      },
      () => {
        this.#connecting = false
        this.#delay = Math.min(this.#delay * 2, MAX_DELAY_MS)
        this.#scheduleRetry()
      },
    )
  }

  #scheduleRetry(): void {
    if (this.#stopped || this.#retryTimer || this.#connecting) return
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      this.reconnectNow()
    }, this.#delay)
    this.#retryTimer.unref()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    const c = this.#client
    this.#client = undefined
    await c?.end().catch(() => {})
  }
}

/**
 * LISTEN subscriptions on `url` that can all be ended at once, for a database handle's close():
 * `listen` as a handle offers it, `reconnectNow` when the database is known to answer again,
 * `closeAll` for shutdown.
 */
export function listenerSet(
  url: string,
  options: ListenOptions = {},
): {
  listen(channel: string, handler: NotificationHandler, events?: ListenEvents): Promise<() => Promise<void>>
  reconnectNow(): void
  closeAll(): Promise<void>
} {
  const subscriptions = new Set<PgSubscription>()
  return {
    async listen(channel, handler, events) {
      const subscription = await subscribePg(url, channel, handler, events, options)
      subscriptions.add(subscription)
      return async () => {
        subscriptions.delete(subscription)
        await subscription.stop()
      }
    },
    reconnectNow() {
      for (const s of subscriptions) s.reconnectNow()
    },
    async closeAll() {
      await Promise.all([...subscriptions].map((s) => s.stop()))
    },
  }
}
