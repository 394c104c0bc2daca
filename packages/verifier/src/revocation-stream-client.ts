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
  const follower = new StreamFollower(options)
  follower.loop()
  return { stop: () => follower.stop() }
}

/** One connection at a time, one retry timer at most; the delay doubles up to its cap. */
class StreamFollower {
  #stopped = false
  #controller: AbortController | undefined
  #retryTimer: NodeJS.Timeout | undefined
  #delay = MIN_DELAY_MS
  #running: Promise<void> = Promise.resolve()

  constructor(private readonly options: StreamOptions) {}

  loop(): void {
    if (this.#stopped) return
    this.#running = this.#connectOnce().then(() => {
      if (this.#stopped) return
      this.#retryTimer = setTimeout(() => this.loop(), this.#delay)
      this.#retryTimer.unref()
      if (this.#delay < MAX_DELAY_MS) this.#delay = Math.min(this.#delay * 2, MAX_DELAY_MS)
    })
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#controller?.abort()
    await this.#running
  }

  /** One connection, until it fails, ends or goes idle; never throws. */
  async #connectOnce(): Promise<void> {
    const abort = (this.#controller = new AbortController())
    let idle: NodeJS.Timeout | undefined
    const armIdle = () => {
      if (idle) clearTimeout(idle)
      idle = setTimeout(() => abort.abort(new Error('revocation stream idle')), this.options.idleTimeoutMs)
      idle.unref()
    }
    try {
      armIdle()
      await this.#read(await this.#open(abort.signal), armIdle)
    } catch (err) {
      if (!this.#stopped) this.options.onDisconnected(err instanceof Error ? err : new Error(String(err)))
    } finally {
      if (idle) clearTimeout(idle)
    }
  }

  async #open(signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const res = await fetch(this.options.url, {
      headers: { authorization: this.options.authorization, accept: 'text/event-stream' },
      signal,
    })
    if (res.status === 200 && res.body) return res.body
    await res.body?.cancel().catch(() => {})
    if (res.status === 401 || res.status === 403) this.#delay = REFUSED_DELAY_MS
    throw new Error(`revocation stream answered ${res.status}`)
  }

  /** Events after the server's `ready`; throws when the stream ends. */
  async #read(body: ReadableStream<Uint8Array>, armIdle: () => void): Promise<never> {
    let connected = false
    const parser = new EventStreamParser((event) => {
      if (event.event === 'ready') {
        connected = true
        this.#delay = MIN_DELAY_MS
        this.options.onConnected()
      } else if (connected) {
        this.options.onEvent(event)
      }
    })
    const decoder = new TextDecoder()
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      armIdle()
      parser.push(decoder.decode(chunk, { stream: true }))
    }
    throw new Error('revocation stream ended')
  }
}
