import pg from 'pg'
import type { ListenEvents, NotificationHandler } from './connect.js'

/**
 * LISTEN on a dedicated connection (a pooled one would lose the subscription when returned).
 * Reconnects with backoff when the connection drops, reporting each state change so that
 * caches can fall back to their TTL bound while notifications may be missed.
 */
export async function listenPg(
  url: string,
  channel: string,
  handler: NotificationHandler,
  events: ListenEvents = {},
): Promise<() => Promise<void>> {
  let stopped = false
  let client: pg.Client | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let delay = 50

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url })
    c.on('notification', (msg) => {
      if (msg.channel === channel) handler(msg.payload ?? '')
    })
    c.on('error', (err) => dropped(c, err))
    c.on('end', () => dropped(c))
    await c.connect()
    await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    if (stopped) {
      await c.end().catch(() => {})
      return
    }
    client = c
    delay = 50
    events.onConnected?.()
  }

  const dropped = (c: pg.Client, err?: Error) => {
    if (client !== c || stopped) return
    client = undefined
    events.onDisconnected?.(err)
    c.end().catch(() => {})
    scheduleRetry()
  }

  const scheduleRetry = () => {
    if (stopped || retryTimer) return
    retryTimer = setTimeout(() => {
      retryTimer = undefined
      connect().catch(() => {
        delay = Math.min(delay * 2, 2000)
        scheduleRetry()
      })
    }, delay)
    retryTimer.unref()
  }

  await connect()
  return async () => {
    stopped = true
    if (retryTimer) clearTimeout(retryTimer)
    const c = client
    client = undefined
    await c?.end().catch(() => {})
  }
}
