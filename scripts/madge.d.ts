// The part of madge's API that scripts/folder-cycles.ts uses (madge ships no types).
declare module 'madge' {
  interface MadgeResult {
    /** Each file, relative to the base directory, with the files it imports. */
    obj(): Record<string, string[]>
  }
  interface MadgeConfig {
    fileExtensions?: string[]
    tsConfig?: string
    baseDir?: string
  }
  export default function madge(path: string | string[], config?: MadgeConfig): Promise<MadgeResult>
}
