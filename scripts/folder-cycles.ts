import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import madge from 'madge'

/*
 * The cycle check on folders (docs/architecture.md "Layers and imports"): madge finds cycles
 * between files, but two folders can import each other through different files, and then
 * neither can be understood, tested or moved without the other. This collapses madge's file
 * graph to the top-level entries of a directory (a folder, or a file lying at the top) and
 * fails on any cycle among them. Run by `npm run lint`.
 */

/** The top-level entry a file belongs to: `oauth/` for `oauth/scope.ts`, `config.ts` for itself. */
export function topLevelOf(file: string): string {
  const slash = file.indexOf('/')
  return slash < 0 ? file : file.slice(0, slash + 1)
}

/** The graph between top-level entries; imports from outside the directory and within one entry are left out. */
export function folderGraph(files: Record<string, readonly string[]>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>()
  for (const [file, imports] of Object.entries(files)) {
    if (file.startsWith('../')) continue
    const from = topLevelOf(file)
    const edges = graph.get(from) ?? new Set<string>()
    graph.set(from, edges)
    for (const imported of imports) {
      const to = topLevelOf(imported)
      if (!imported.startsWith('../') && to !== from) edges.add(to)
    }
  }
  return graph
}

/** One cycle of the graph as the path around it (first entry repeated at the end), or undefined. */
export function findCycle(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const done = new Set<string>()
  const path: string[] = []
  const visit = (node: string): string[] | undefined => {
    const open = path.indexOf(node)
    if (open >= 0) return [...path.slice(open), node]
    if (done.has(node)) return undefined
    path.push(node)
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const cycle = visit(next)
      if (cycle) return cycle
    }
    path.pop()
    done.add(node)
    return undefined
  }
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node)
    if (cycle) return cycle
  }
  return undefined
}

/** A cycle among the top-level entries of `dir`, as madge resolves its TypeScript imports. */
export async function findFolderCycle(dir: string, tsConfig = 'tsconfig.json'): Promise<string[] | undefined> {
  const result = await madge(resolve(dir), { baseDir: resolve(dir), fileExtensions: ['ts'], tsConfig: resolve(tsConfig) })
  return findCycle(folderGraph(result.obj()))
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const cycle = await findFolderCycle('src')
  if (cycle) {
    console.error(`Folder cycle in src/: ${cycle.join(' → ')}`)
    process.exitCode = 1
  } else {
    console.log('No folder cycle in src/.')
  }
}
