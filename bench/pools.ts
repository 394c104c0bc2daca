import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/*
 * Pools of single-use request items (token plaintexts, authorization codes) for the load
 * generator. A pool hands out a file and an offset; the load worker reports how many items it
 * sent, and the next run starts after them. When the rest of the batch is too short for the
 * next run (or too old: codes expire), a fresh batch is seeded and written.
 */

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'))

export function removePoolFiles(): void {
  rmSync(dir, { recursive: true, force: true })
}

let files = 0
export function writePoolFile(items: readonly string[]): string {
  const file = join(dir, `pool-${++files}.txt`)
  writeFileSync(file, items.join('\n') + '\n')
  return file
}

interface Batch {
  file: string
  items: string[]
  size: number
  used: number
  createdAt: number
}

/** Codes live 10 minutes; a batch is retired well before that. */
const MAX_BATCH_AGE_MS = 8 * 60_000

export class Pool {
  private batch: Batch | undefined

  /**
   * @param seed inserts `n` fresh items into the database and returns their plaintexts
   * @param minBatch smallest batch to seed (the cache-miss pool must hold ≥ 100,000)
   */
  constructor(
    readonly name: string,
    private readonly seed: (n: number) => Promise<string[]>,
    private readonly minBatch: number,
  ) {}

  /** A file and offset with at least `need` unused items after the offset. */
  async reserve(need: number): Promise<{ file: string; offset: number }> {
    const b = this.batch
    const fresh = b && b.size - b.used >= need && Date.now() - b.createdAt < MAX_BATCH_AGE_MS
    if (!fresh) {
      const size = Math.max(this.minBatch, Math.ceil(need))
      const items = await this.seed(size)
      this.batch = { file: writePoolFile(items), items, size: items.length, used: 0, createdAt: Date.now() }
    }
    return { file: this.batch!.file, offset: this.batch!.used }
  }

  /** One item seeded on its own, for the probe (no batch is seeded for an endpoint that is missing). */
  async take(): Promise<string> {
    const [item] = await this.seed(1)
    return item!
  }

  /** Records that the last run sent `count` items from its offset. */
  consumed(count: number): void {
    if (this.batch) this.batch.used = Math.min(this.batch.size, this.batch.used + count)
  }
}

/**
 * A fixed list the load generator cycles through on purpose (cached paths, growth pool, session
 * cookies). Each run starts where the last one stopped, so across runs every item is sent
 * equally often: a pool of sessions spreads authorize's codes evenly over its users (docs/operating/limits.md).
 */
export class FixedPool {
  readonly file: string
  /** Where the next run starts. */
  offset = 0
  constructor(
    readonly name: string,
    readonly items: readonly string[],
  ) {
    this.file = writePoolFile(items)
  }

  /** Records that the last run sent `count` items from its offset. */
  advance(count: number): void {
    this.offset = (this.offset + count) % this.items.length
  }
}
