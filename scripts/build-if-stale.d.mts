/** What `npm run build` compiles. */
export declare const SOURCES: readonly string[]
/** What it produces that a started server and the command line load. */
export declare const OUTPUTS: readonly string[]
/** Why the build under `root` cannot be used as it is, or undefined when it is current. */
export declare function staleBuild(root: string): string | undefined
