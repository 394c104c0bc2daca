import { join } from 'node:path'

/**
 * A sample operator logo (an SVG with a <script> in it, which must never run), for
 * BRAND_LOGO_FILE in the tests, the fuzz and the screenshots.
 */
export const BRAND_LOGO_FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'brand-logo.svg')
