/*
 * A bounded least-recently-used map whose entries also expire. Recency is kept in an intrusive
 * doubly linked list rather than by re-inserting into the Map: V8's Map leaves a hole for every
 * delete, so "delete + set on each hit" and "evict the first key" both degrade to a scan over
 * the holes on a large, busy cache. A hit is one Map lookup and a few pointer writes.
 */

interface Node<V> {
  key: string
  value: V
  expiresAt: number
  newer: Node<V> | null
  older: Node<V> | null
}

export class TtlLru<V> {
  readonly #map = new Map<string, Node<V>>()
  /** Most recently used. */
  #newest: Node<V> | null = null
  /** Least recently used: evicted first. */
  #oldest: Node<V> | null = null

  constructor(readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer')
  }

  get size(): number {
    return this.#map.size
  }

  /** The live value, or undefined when absent or expired at `now` (an expired entry is removed). */
  get(key: string, now: number): V | undefined {
    const node = this.#map.get(key)
    if (node === undefined) return undefined
    if (node.expiresAt <= now) {
      this.#remove(node)
      return undefined
    }
    if (node !== this.#newest) {
      this.#unlink(node)
      this.#pushNewest(node)
    }
    return node.value
  }

  set(key: string, value: V, expiresAt: number): void {
    const existing = this.#map.get(key)
    if (existing !== undefined) {
      existing.value = value
      existing.expiresAt = expiresAt
      if (existing !== this.#newest) {
        this.#unlink(existing)
        this.#pushNewest(existing)
      }
      return
    }
    if (this.#map.size >= this.maxEntries && this.#oldest !== null) this.#remove(this.#oldest)
    const node: Node<V> = { key, value, expiresAt, newer: null, older: null }
    this.#map.set(key, node)
    this.#pushNewest(node)
  }

  delete(key: string): boolean {
    const node = this.#map.get(key)
    if (node === undefined) return false
    this.#remove(node)
    return true
  }

  /** Removes every entry whose value matches; a walk over the whole cache, for rare events. */
  deleteWhere(matches: (value: V) => boolean): number {
    let removed = 0
    for (let node = this.#oldest; node !== null;) {
      const next = node.newer
      if (matches(node.value)) {
        this.#remove(node)
        removed++
      }
      node = next
    }
    return removed
  }

  clear(): void {
    this.#map.clear()
    this.#newest = null
    this.#oldest = null
  }

  #remove(node: Node<V>): void {
    this.#map.delete(node.key)
    this.#unlink(node)
  }

  #unlink(node: Node<V>): void {
    if (node.newer !== null) node.newer.older = node.older
    else this.#newest = node.older
    if (node.older !== null) node.older.newer = node.newer
    else this.#oldest = node.newer
    node.newer = null
    node.older = null
  }

  #pushNewest(node: Node<V>): void {
    node.older = this.#newest
    node.newer = null
    if (this.#newest !== null) this.#newest.newer = node
    this.#newest = node
    if (this.#oldest === null) this.#oldest = node
  }
}
