/*
 * A bar chart as an inline SVG document, drawn on the server so the page needs no script
 * (docs/operating/admin.md "The dashboard"). Read without colour: every bar is outlined and filled with
 * its chart's pattern in `currentColor` (a stylesheet may set the colour; without one, or in
 * forced colours, it is the text's), and the axis carries its numbers as text. For assistive
 * technology the document is one image named by its <title> and described by its <desc>
 * (WCAG 1.1.1); the page gives the numbers themselves in a table beside it.
 */

/** How a chart's bars are filled, so that charts side by side differ in more than colour. */
export type BarPattern = 'solid' | 'hatched' | 'dotted' | 'crossed' | 'outlined'

export interface Bar {
  value: number
  /** The bar's bucket in words, for its tooltip ("14:00 to 15:00"). */
  label: string
  /** Written under the axis below the bar; '' for none. */
  tick: string
}

export interface BarChart {
  /** Unique on the page: the ids inside the document start with it. Letters, digits and '-'. */
  id: string
  title: string
  description: string
  bars: readonly Bar[]
  pattern: BarPattern
}

/** The drawing's own units; the document scales to its box (viewBox), these are its natural size. */
export const CHART_WIDTH = 360
export const CHART_HEIGHT = 150
const LEFT = 44
const RIGHT = 18
const TOP = 12
const BOTTOM = 24
const PLOT_W = CHART_WIDTH - LEFT - RIGHT
const PLOT_H = CHART_HEIGHT - TOP - BOTTOM
/** A bar of 1 beside one of a billion still shows: anything above zero is at least this tall. */
export const MIN_BAR_HEIGHT = 2

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
const round = (n: number) => Math.round(n * 10) / 10
const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 })

/** The top of the scale: the smallest of 1, 2 or 5 times a power of ten that holds `max`. */
export function scaleTop(max: number): number {
  if (!(max > 1)) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 5, 10].map((m) => m * power).find((top) => top >= max)!
}

/** A count as drawn: a finite whole number, at least zero. */
const countOf = (value: number) => (Number.isFinite(value) && value > 0 ? Math.floor(value) : 0)

function patternDefs(id: string, pattern: BarPattern): string {
  const fill = `${id}-fill`
  const tile = (size: number, body: string, rotate = 0) =>
    `<defs><pattern id="${fill}" width="${size}" height="${size}" patternUnits="userSpaceOnUse"` +
    `${rotate ? ` patternTransform="rotate(${rotate})"` : ''}>${body}</pattern></defs>`
  switch (pattern) {
    case 'hatched':
      return tile(6, '<line x1="0" y1="0" x2="0" y2="6" stroke="currentColor" stroke-width="3"/>', 45)
    case 'dotted':
      return tile(5, '<circle cx="2.5" cy="2.5" r="1.5" fill="currentColor"/>')
    case 'crossed':
      return tile(
        6,
        '<line x1="0" y1="0" x2="0" y2="6" stroke="currentColor" stroke-width="1.5"/>' +
          '<line x1="0" y1="0" x2="6" y2="0" stroke="currentColor" stroke-width="1.5"/>',
        45,
      )
    default:
      return ''
  }
}

function fillOf(id: string, pattern: BarPattern): string {
  if (pattern === 'solid') return 'currentColor'
  if (pattern === 'outlined') return 'none'
  return `url(#${id}-fill)`
}

function axes(top: number, empty: boolean, ticks: string): string {
  const baseline = TOP + PLOT_H
  const labels =
    `<text x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${compact.format(top)}</text>` +
    `<text x="${LEFT - 6}" y="${baseline + 4}" text-anchor="end">0</text>`
  const lines =
    `<line x1="${LEFT}" y1="${TOP}" x2="${CHART_WIDTH - RIGHT}" y2="${TOP}" stroke="currentColor" stroke-opacity="0.4" stroke-dasharray="3 3"/>` +
    `<line x1="${LEFT}" y1="${baseline}" x2="${CHART_WIDTH - RIGHT}" y2="${baseline}" stroke="currentColor"/>`
  const none = empty ? `<text x="${LEFT + PLOT_W / 2}" y="${TOP + PLOT_H / 2}" text-anchor="middle">None</text>` : ''
  return `<g class="axis" font-size="11" fill="currentColor">${labels}${none}${ticks}</g>${lines}`
}

function slotOf(chart: BarChart): number {
  return PLOT_W / Math.max(1, chart.bars.length)
}

function bars(chart: BarChart, top: number): string {
  const slot = slotOf(chart)
  const width = round(Math.max(1, slot * 0.7))
  const fill = fillOf(chart.id, chart.pattern)
  return chart.bars
    .map((bar, i) => {
      const value = countOf(bar.value)
      if (value === 0) return ''
      const height = round(Math.max(MIN_BAR_HEIGHT, (value / top) * PLOT_H))
      return (
        `<rect class="bar" x="${round(LEFT + i * slot + (slot - width) / 2)}" y="${round(TOP + PLOT_H - height)}"` +
        ` width="${width}" height="${height}" fill="${fill}" stroke="currentColor"><title>${escape(bar.label)}: ${value}</title></rect>`
      )
    })
    .join('')
}

/** The buckets' names under the axis, in the axis' colour. */
function ticks(chart: BarChart): string {
  const slot = slotOf(chart)
  return chart.bars
    .map((bar, i) =>
      bar.tick ? `<text x="${round(LEFT + (i + 0.5) * slot)}" y="${CHART_HEIGHT - 6}" text-anchor="middle">${escape(bar.tick)}</text>` : '',
    )
    .join('')
}

/** The chart as an `<svg>` element to place in a page as is; every text in it is escaped. */
export function barChartSvg(chart: BarChart): string {
  if (!/^[A-Za-z][\w-]*$/.test(chart.id)) throw new Error(`a chart id is letters, digits and '-': ${chart.id}`)
  const top = scaleTop(Math.max(0, ...chart.bars.map((b) => countOf(b.value))))
  const empty = chart.bars.every((b) => countOf(b.value) === 0)
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="bar-chart" role="img" viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}"` +
    ` width="${CHART_WIDTH}" height="${CHART_HEIGHT}" aria-labelledby="${chart.id}-title" aria-describedby="${chart.id}-desc">` +
    `<title id="${chart.id}-title">${escape(chart.title)}</title><desc id="${chart.id}-desc">${escape(chart.description)}</desc>` +
    `${patternDefs(chart.id, chart.pattern)}${axes(top, empty, ticks(chart))}<g class="bars">${bars(chart, top)}</g></svg>`
  )
}
