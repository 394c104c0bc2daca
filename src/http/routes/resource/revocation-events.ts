import type { ServerResponse } from 'node:http'
import { type RevocationFeed, STREAM_BUFFER_BYTES, type StreamClient } from '../../../revocation/index.js'

/*
 * The revocation stream's transport: server-sent events on node:http responses, fed by the
 * RevocationFeed (src/revocation/stream-feed.ts says who hears what, and the bounds).
 *
 *   event: ready      the subscription holds; the client forgets its cache (it may have missed
 *                     events while it was not subscribed)
 *   event: revoked    data: comma-separated hex SHA-256 digests of revoked access tokens
 *   event: reset      forget everything: notices were missed (this server's LISTEN connection
 *                     dropped)
 *   : ping            every 15 s, so a dead connection is noticed
 *
 * A subscriber whose unsent output passes MAX_BUFFERED_BYTES is cut (docs/operating/limits.md).
 */

const HEARTBEAT_MS = 15_000
/** A subscriber this far behind is not reading: cut it off (it reconnects and resets). */
const MAX_BUFFERED_BYTES = STREAM_BUFFER_BYTES
const DIGESTS_PER_EVENT = 100

/** The open event streams of one app, and the heartbeat they share. */
export class RevocationEventStreams {
  readonly #open = new Set<ServerResponse>()
  #heartbeat: NodeJS.Timeout | undefined

  constructor(private readonly feed: RevocationFeed) {}

  /**
   * Starts the event stream on `res` and subscribes it to the feed until the connection
   * closes. The caller has checked `feed.refusal(client)` with no await since.
   */
  open(res: ServerResponse, client: StreamClient): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.socket?.setNoDelay(true)
    const unsubscribe = this.feed.add({
      client,
      revoked: (digests) => {
        for (let i = 0; i < digests.length; i += DIGESTS_PER_EVENT) {
          send(res, `event: revoked\ndata: ${digests.slice(i, i + DIGESTS_PER_EVENT).join(',')}\n\n`)
        }
      },
      reset: () => send(res, 'event: reset\ndata:\n\n'),
      end: () => res.end(),
    })
    this.#open.add(res)
    res.on('close', () => {
      unsubscribe()
      this.#open.delete(res)
      if (this.#open.size === 0) this.#stopHeartbeat()
    })
    if (!this.#heartbeat) {
      this.#heartbeat = setInterval(() => {
        for (const open of this.#open) send(open, ': ping\n\n')
      }, HEARTBEAT_MS)
      this.#heartbeat.unref()
    }
    res.write('retry: 1000\n\nevent: ready\ndata:\n\n')
  }

  /** Ends every stream of this app: open streams would hold the server's close() until their clients leave. */
  closeAll(): void {
    this.#stopHeartbeat()
    for (const res of this.#open) res.end()
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
  }
}

/**
 * Once the kernel's socket buffer is full, Node keeps what does not fit in memory
 * (`writableLength`); a subscriber that lets that pass the bound is not reading, so its
 * connection is destroyed: ending it would wait for the same unread bytes.
 */
function send(res: ServerResponse, chunk: string): void {
  if (!res.write(chunk) && res.writableLength > MAX_BUFFERED_BYTES) res.destroy()
}
