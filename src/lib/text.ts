/*
 * Control characters in what people type into forms. No one types U+0000 or an escape sequence
 * into a name or an email, PostgreSQL refuses U+0000 in text (so it would surface as a 500), and
 * the others corrupt pages and logs where the value is shown again. Fields refuse them as input.
 */

/** Unicode general category Cc: C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Cc without tab, line feed and carriage return, which a textarea sends legitimately. */
const CONTROL_IN_MULTILINE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/

/** A single-line field (email, password, name) with any control character. */
export function hasControlCharacter(value: string): boolean {
  return CONTROL.test(value)
}

/** A textarea (description, one-per-line lists) with a control character other than tab, LF or CR. */
export function hasControlCharacterInText(value: string): boolean {
  return CONTROL_IN_MULTILINE.test(value)
}

const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g

/**
 * `value` made safe to store and show again as one short line: control characters removed,
 * surrounding space trimmed, and at most `max` characters (code points, so a character outside
 * the Basic Multilingual Plane is never cut in half), the last one an ellipsis when cut.
 */
export function boundedLine(value: string, max: number): string {
  const chars = Array.from(value.replace(CONTROL_ALL, '').trim())
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`
}
