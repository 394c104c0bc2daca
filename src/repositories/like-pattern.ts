/** A LIKE pattern for rows containing `text`, its wildcards escaped: "a_b" finds "a_b" and not "axb". */
export function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}
