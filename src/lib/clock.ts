/** Every notion of "now" comes from here, so tests can move time without sleeping. */
export type Clock = () => Date

export const systemClock: Clock = () => new Date()

/** A clock for tests: starts at `start`, moves only when told to. */
export function manualClock(start = new Date('2026-01-01T00:00:00Z')) {
  let now = start.getTime()
  const clock: Clock & { advance(ms: number): void; set(d: Date): void } = Object.assign(() => new Date(now), {
    advance(ms: number) {
      now += ms
    },
    set(d: Date) {
      now = d.getTime()
    },
  })
  return clock
}
