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
}

const MIN_DELAY_MS = 50
const MAX_DELAY_MS = 2000

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
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 5_000
  let stopped = false
  let client: pg.Client | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let heartbeat: NodeJS.Timeout | undefined
  let delay = MIN_DELAY_MS

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url, keepAlive: true, keepAliveInitialDelayMillis: 10_000 })
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

  const probe = (c: pg.Client) => {
    const timeout = setTimeout(
      () => dropped(c, new Error(`LISTEN connection unresponsive for ${heartbeatTimeoutMs} ms`)),
      heartbeatTimeoutMs,
    )
    timeout.unref()
    c.query('select 1').then(
      () => clearTimeout(timeout),
      (err: Error) => {
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

  const scheduleRetry = () => {
    if (stopped || retryTimer) return
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      connect().catch(() => {
        delay = Math.min(delay * 2, MAX_DELAY_MS)
        scheduleRetry()
      })
    }, delay)
    retryTimer.unref()
  }

  await connect()
  return async () => {
    stopped = true
    if (retryTimer) clearTimeout(retryTimer)
    if (heartbeat) clearInterval(heartbeat)
    const c = client
    client = undefined
    await c?.end().catch(() => {})
  }
}

/**
 * LISTEN subscriptions on `url` that can all be ended at once, for a database handle's close():
 * `listen` as a handle offers it, `closeAll` for shutdown.
 */
export function listenerSet(url: string): {
  listen(channel: string, handler: NotificationHandler, events?: ListenEvents): Promise<() => Promise<void>>
  closeAll(): Promise<void>
} {
  const subscriptions = new Set<() => Promise<void>>()
  return {
    async listen(channel, handler, events) {
      const stop = await listenPg(url, channel, handler, events)
      subscriptions.add(stop)
      return async () => {
        subscriptions.delete(stop)
        await stop()
      }
    },
    async closeAll() {
      await Promise.all([...subscriptions].map((s) => s()))
    },
  }
}
