/* The slice of autocannon's untyped API the load worker uses. */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request | undefined
    onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void
  }

  export interface Options {
    /** Several: connection i goes to url[i mod n]. */
    url: string | string[]
    connections?: number
    duration?: number
    amount?: number
    timeout?: number
    sampleInt?: number
    pipelining?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: Request[]
  }

  export type Result = Record<string, unknown>
  export type Instance = EventEmitter & { stop(): void }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance
  export default autocannon
}
