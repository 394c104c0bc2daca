/**
 * Milliseconds, refreshed by a timer every `tickMs` instead of read on every call: reading
 * the system clock is slow on some virtual machines, as slow as the rest of a cached token
 * check. The value lags real time by at most one tick (plus however
 * long the event loop is blocked), so a cache using it shortens its TTL by one tick.
 */
export class CoarseClock {
  #now = Date.now()
  readonly #timer: NodeJS.Timeout

  constructor(readonly tickMs = 50) {
    this.#timer = setInterval(() => {
      this.#now = Date.now()
    }, tickMs)
    this.#timer.unref()
  }

  readonly now = (): number => this.#now

  stop(): void {
    clearInterval(this.#timer)
  }
}
