import { QUOTAS } from '../limits/policy.js'

/*
 * The revocation domain's door (docs/architecture.md "Doors"): what the revocation stream's
 * writer (src/http/routes/resource/) may know of the feed it writes from.
 */
export type { RevocationFeed, StreamClient, StreamRefusal } from './stream-feed.js'

/** The stream writer's bound on a subscriber's unsent output (src/limits/policy.ts). */
export const STREAM_BUFFER_BYTES = QUOTAS.streamBufferBytes.max
