import { Writable } from 'node:stream'

/** A log stream for an app under test (`logStream`) that keeps every line it is given, in order. */
export function captureLog(): { stream: Writable; lines: string[] } {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { stream, lines }
}
