import { executionAsyncResource } from 'node:async_hooks'

/*
 * Node builds each `process.nextTick` entry as an object literal with two symbol keys
 * (`{ [async_id_symbol], [trigger_async_id_symbol], callback, args }`, lib/internal/process/
 * task_queues.js), about seven per HTTP request. No such object outlives its tick, so a full
 * garbage collection frees the hidden classes of the chain, the next tick builds new ones, and
 * V8 marks the literal's property definitions megamorphic: from then on every tick object is
 * built through calls into V8's runtime, several times slower, a share of a cached token-info
 * request's server time worth keeping (figures in Gatehouse's docs/scaling.md "Node's tick
 * objects"). Bare
 * Fastify rarely runs a full collection and stays fast; a process with caches, Gatehouse's or a
 * resource API's, runs them all the time. One tick object kept for the life of the process keeps
 * the chain alive. It must be kept before the first full collection: Gatehouse's server does so
 * first thing, and createVerifier does for the resource API that builds its verifier at start-up,
 * so that the guard on each of its requests is not slowed by a process-wide cost it did not cause.
 */

let kept: object | undefined

/** The tick object kept, if any yet (for tests and diagnostics). */
export function keptTickObject(): object | undefined {
  return kept
}

/**
 * Keeps the next tick's own object for the life of the process; resolves with it. Inside a tick's
 * callback, `executionAsyncResource()` is that tick's object, without any async hook enabled.
 */
export function keepTickClasses(): Promise<object> {
  return new Promise((resolve) => {
    process.nextTick(() => {
      kept ??= executionAsyncResource()
      resolve(kept)
    })
  })
}
