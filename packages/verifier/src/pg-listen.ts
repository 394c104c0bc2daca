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
 * this process within a second of the database accepting connections again (README "Failures
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
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 5_000
  const connectTimeoutMs = options.connectTimeoutMs ?? 2_000
  let stopped = false
  let client: pg.Client | undefined
  let connecting = false
  let retryTimer: NodeJS.Timeout | undefined
  let heartbeat: NodeJS.Timeout | undefined
  let probing = false
  let delay = MIN_DELAY_MS

  const connect = async (): Promise<void> => {
    const c = new pg.Client({
      connectionString: url,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: connectTimeoutMs,
    })
    c.on('notification', (msg) => {
      if (msg.channel === channel) handler(msg.payload ?? '')
    })
    c.on('error', (err) => dropped(c, err))
    c.on('end', () => dropped(c))
    try {
      await c.connect()
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    } catch (err) {
      c.end().catch(() => {})
      throw err
    }
    if (stopped) {
      await c.end().catch(() => {})
      return
    }
    client = c
    delay = MIN_DELAY_MS
    heartbeat = setInterval(() => probe(c), heartbeatMs)
    heartbeat.unref()
    events.onConnected?.()
  }

  // At most one probe in flight: a stuck connection must not collect one query per interval.
  const probe = (c: pg.Client) => {
    if (probing) return
    probing = true
    const timeout = setTimeout(
      () => dropped(c, new Error(`LISTEN connection unresponsive for ${heartbeatTimeoutMs} ms`)),
      heartbeatTimeoutMs,
    )
    timeout.unref()
    c.query('select 1').then(
      () => {
        probing = false
        clearTimeout(timeout)
      },
      (err: Error) => {
        probing = false
        clearTimeout(timeout)
        dropped(c, err)
      },
    )
  }

  const dropped = (c: pg.Client, err?: Error) => {
    if (client !== c || stopped) return
    client = undefined
    if (heartbeat) clearInterval(heartbeat)
    heartbeat = undefined
    events.onDisconnected?.(err)
    c.end().catch(() => {})
    scheduleRetry()
  }

  // One attempt at a time, one timer at most: reconnecting never piles up clients or timers.
  const attempt = () => {
    if (stopped || connecting || client) return
    if (retryTimer) clearTimeout(retryTimer)
    retryTimer = undefined
    connecting = true
    connect().then(
      () => {
        connecting = false
      },
      () => {
        connecting = false
        delay = Math.min(delay * 2, MAX_DELAY_MS)
        scheduleRetry()
      },
    )
  }

  const scheduleRetry = () => {
    if (stopped || retryTimer || connecting) return
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      attempt()
    }, delay)
    retryTimer.unref()
  }

  await connect()
  return {
    reconnectNow: attempt,
    async stop() {
      stopped = true
      if (retryTimer) clearTimeout(retryTimer)
      if (heartbeat) clearInterval(heartbeat)
      const c = client
      client = undefined
      await c?.end().catch(() => {})
    },
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
