/*
 * Where a Gatehouse process's memory is, read from its own GET /metrics (prom-client's process
 * and V8 metrics; loopback may read it while METRICS_TOKEN is unset): docs/performance.md asks what the
 * resident memory under load is beyond an idle server's. Read when a server's load ends, so it
 * shows what stayed, not the peak (bench/cpu.ts peakRssBytes).
 */

export interface MemoryBreakdown {
  rss: number
  heapTotal: number
  heapUsed: number
  /** V8's heap by space (new, old, code, large_object, …): the space's size, not its use. */
  heapSpaces: Record<string, number>
  /** Memory of C++ objects bound to JavaScript ones, array buffers included. */
  external: number
}

/** The sample of `name` (with `labels`) in a Prometheus text exposition, or null. */
export function sampleOf(text: string, name: string, labels = ''): number | null {
  const prefix = labels ? `${name}{${labels}} ` : `${name} `
  const line = text.split('\n').find((l) => l.startsWith(prefix))
  const value = line === undefined ? NaN : Number(line.slice(prefix.length).split(' ')[0])
  return Number.isFinite(value) ? value : null
}

export function parseMemory(text: string): MemoryBreakdown | null {
  const rss = sampleOf(text, 'process_resident_memory_bytes')
  const heapTotal = sampleOf(text, 'nodejs_heap_size_total_bytes')
  const heapUsed = sampleOf(text, 'nodejs_heap_size_used_bytes')
  const external = sampleOf(text, 'nodejs_external_memory_bytes')
  if (rss === null || heapTotal === null || heapUsed === null || external === null) return null
  const heapSpaces: Record<string, number> = {}
  for (const m of text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="([a-z_]+)"\} (\d+)/gm)) {
    const bytes = Number(m[2])
    if (bytes > 0) heapSpaces[m[1]!] = bytes
  }
  return { rss, heapTotal, heapUsed, heapSpaces, external }
}

/** The breakdown of the server at `origin`, or null when it does not answer. */
export async function readMemory(origin: string): Promise<MemoryBreakdown | null> {
  try {
    const res = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(5000) })
    return res.ok ? parseMemory(await res.text()) : null
  } catch {
    return null
  }
}
