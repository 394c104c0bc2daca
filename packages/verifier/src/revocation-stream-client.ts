/*
 * The client side of GET /oauth/revocations/stream: a server-sent-events stream (HTML Living
 * Standard 9.2) of revoked token digests, read over fetch because EventSource cannot send
 * credentials in a header. Reconnects with backoff; reports each state change so that the
 * cache can forget what it may have missed.
 */

export interface StreamEvent {
  event: string
  data: string
}

export interface StreamOptions {
  url: string
  authorization: string
  onEvent(event: StreamEvent): void
  /** The server confirmed the subscription (its `ready` event). */
  onConnected(): void
  onDisconnected(error?: Error): void
  /** No byte (not even the server's heartbeat) for this long means the connection is dead. */
  idleTimeoutMs: number
}

const MIN_DELAY_MS = 50
const MAX_DELAY_MS = 2_000
/** Refused credentials will not fix themselves quickly; retry, but rarely. */
const REFUSED_DELAY_MS = 30_000

/** Splits a text/event-stream into events; feed it decoded chunks in order. */
export class EventStreamParser {
  #buffer = ''
  #event = ''
  #data: string[] = []

  constructor(private readonly emit: (event: StreamEvent) => void) {}

  push(chunk: string): void {
    this.#buffer += chunk
    let start = 0
    for (;;) {
      const lf = this.#buffer.indexOf('\n', start)
      if (lf === -1) break
      const end = lf > start && this.#buffer.charCodeAt(lf - 1) === 13 ? lf - 1 : lf
      this.#line(this.#buffer.slice(start, end))
      start = lf + 1
    }
    this.#buffer = this.#buffer.slice(start)
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length > 0 || this.#event !== '') {
        this.emit({ event: this.#event || 'message', data: this.#data.join('\n') })
      }
      this.#event = ''
      this.#data = []
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') this.#event = value
    else if (field === 'data') this.#data.push(value)
  }
}

/** Follows the stream until `stop` is called. */
export function followRevocationStream(options: StreamOptions): { stop(): Promise<void> } {
  let stopped = false
  let controller: AbortController | undefined
  let retryTimer: NodeJS.Timeout | undefined
  let delay = MIN_DELAY_MS
  let running: Promise<void> = Promise.resolve()

  const connectOnce = async (): Promise<void> => {
    controller = new AbortController()
    const abort = controller
    let idle: NodeJS.Timeout | undefined
    const armIdle = () => {
      if (idle) clearTimeout(idle)
      idle = setTimeout(() => abort.abort(new Error('revocation stream idle')), options.idleTimeoutMs)
      idle.unref()
    }
    let connected = false
    try {
      armIdle()
      const res = await fetch(options.url, {
        headers: { authorization: options.authorization, accept: 'text/event-stream' },
        signal: abort.signal,
      })
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel().catch(() => {})
        const err = new Error(`revocation stream answered ${res.status}`)
        if (res.status === 401 || res.status === 403) delay = REFUSED_DELAY_MS
        throw err
      }
      const parser = new EventStreamParser((event) => {
        if (event.event === 'ready') {
          connected = true
          delay = MIN_DELAY_MS
          options.onConnected()
        } else if (connected) {
          options.onEvent(event)
        }
      })
      const decoder = new TextDecoder()
      for await (const chunk of res.body) {
        armIdle()
        parser.push(decoder.decode(chunk as Uint8Array, { stream: true }))
      }
      throw new Error('revocation stream ended')
    } catch (err) {
      if (!stopped) options.onDisconnected(err instanceof Error ? err : new Error(String(err)))
    } finally {
      if (idle) clearTimeout(idle)
    }
  }

  const loop = () => {
    if (stopped) return
    running = connectOnce().then(() => {
      if (stopped) return
      retryTimer = setTimeout(loop, delay)
      retryTimer.unref()
      if (delay < MAX_DELAY_MS) delay = Math.min(delay * 2, MAX_DELAY_MS)
    })
  }
  loop()

  return {
    async stop() {
      stopped = true
      if (retryTimer) clearTimeout(retryTimer)
      controller?.abort()
      await running
    },
  }
}
