import { describe, expect, it } from 'vitest'
import {
  type Bar,
  type BarChart,
  type BarPattern,
  CHART_HEIGHT,
  CHART_WIDTH,
  MIN_BAR_HEIGHT,
  barChartSvg,
  scaleTop,
} from '../../src/lib/bar-chart.js'

/*
 * The dashboard's charts (src/lib/bar-chart.ts): bars in proportion, named for assistive
 * technology, drawn without colour carrying the meaning, and sound with no data or one huge count.
 */

const chart = (bars: Bar[], more: Partial<BarChart> = {}): string =>
  barChartSvg({ id: 'c', title: 'Sign-ins per hour', description: 'Sign-ins: 14 in all.', pattern: 'solid', bars, ...more })

const bars = (values: number[]): Bar[] => values.map((value, i) => ({ value, label: `hour ${i}`, tick: i % 2 === 0 ? `t${i}` : '' }))

interface Rect {
  x: number
  y: number
  width: number
  height: number
  fill: string
  title: string
}
function rects(svg: string): Rect[] {
  return [
    ...svg.matchAll(
      /<rect class="bar" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="([^"]+)"[^>]*><title>([^<]*)<\/title><\/rect>/g,
    ),
  ].map((m) => ({ x: Number(m[1]), y: Number(m[2]), width: Number(m[3]), height: Number(m[4]), fill: m[5]!, title: m[6]! }))
}
const texts = (svg: string) => [...svg.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1])

describe('barChartSvg', () => {
  it('draws a bar per count above zero, in proportion to the top of the scale, each named with its count', () => {
    const svg = chart(bars([0, 3, 10, 1]))
    const drawn = rects(svg)
    expect(drawn.map((r) => r.title)).toEqual(['hour 1: 3', 'hour 2: 10', 'hour 3: 1'])
    const tallest = drawn[1]!.height
    expect(drawn[0]!.height / tallest).toBeCloseTo(0.3, 2)
    expect(drawn[2]!.height / tallest).toBeCloseTo(0.1, 2)
    // Bars stand on one baseline, left to right in the order given, inside the drawing.
    expect(new Set(drawn.map((r) => Math.round((r.y + r.height) * 10)))).toHaveProperty('size', 1)
    expect(drawn.map((r) => r.x)).toEqual([...drawn.map((r) => r.x)].sort((a, b) => a - b))
    for (const r of drawn) {
      expect(r.x + r.width).toBeLessThanOrEqual(CHART_WIDTH)
      expect(r.y).toBeGreaterThanOrEqual(0)
    }
    // The scale's top and zero, and the ticks given, as text.
    expect(texts(svg)).toEqual(['10', '0', 't0', 't2'])
  })

  it('is one image named by its title and described by its desc, every text escaped', () => {
    const svg = chart(bars([2]), { id: 'chart-a1', title: 'Sign-ins <b>"x"</b>', description: "Peak & 'low'" })
    expect(svg).toMatch(/^<svg [^>]*role="img"[^>]*aria-labelledby="chart-a1-title" aria-describedby="chart-a1-desc"/)
    expect(svg).toContain(`viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}"`)
    expect(svg).toContain('<title id="chart-a1-title">Sign-ins &lt;b&gt;&quot;x&quot;&lt;/b&gt;</title>')
    expect(svg).toContain('<desc id="chart-a1-desc">Peak &amp; &#39;low&#39;</desc>')
    const hostile = chart([{ value: 1, label: '</title><script>', tick: '<img>' }])
    expect(hostile).not.toMatch(/<script|<img/)
    expect(() => chart(bars([1]), { id: '"><script>' })).toThrow(/chart id/)
  })

  it('fills each pattern differently, outlined in currentColor, so charts differ without colour', () => {
    const patterns: BarPattern[] = ['solid', 'hatched', 'dotted', 'crossed', 'outlined']
    const fills = patterns.map((pattern) => {
      const svg = chart(bars([1, 2]), { id: `p-${pattern}`, pattern })
      expect(svg).not.toMatch(/#[0-9a-f]{3,6}\b|rgb\(/i)
      expect(svg).toMatch(/<rect class="bar"[^>]* stroke="currentColor"/)
      const fill = rects(svg)[0]!.fill
      if (fill.startsWith('url(')) expect(svg).toContain(`<pattern id="p-${pattern}-fill"`)
      return fill === 'currentColor' || fill === 'none' ? fill : svg.slice(svg.indexOf('<pattern'), svg.indexOf('</pattern>'))
    })
    expect(new Set(fills).size).toBe(patterns.length)
  })

  it('says "None" over an empty baseline when every count is zero, with a scale of 0 to 1', () => {
    const svg = chart(bars([0, 0, 0]))
    expect(rects(svg)).toEqual([])
    expect(texts(svg)).toEqual(['1', '0', 'None', 't0', 't2'])
    expect(chart([])).toContain('>None</text>')
  })

  it('keeps one huge count inside the drawing and a count of one still visible beside it', () => {
    const svg = chart(bars([1, 1e12, 0, 0]))
    const [small, huge] = rects(svg)
    expect(huge!.y).toBeCloseTo(12, 5)
    expect(small!.height).toBe(MIN_BAR_HEIGHT)
    expect(texts(svg)[0]).toBe('1T')
    expect(svg).not.toMatch(/NaN|Infinity|e\+/)
  })

  it('draws nothing for a count that is not a whole number at least zero', () => {
    const svg = chart(bars([Number.NaN, -4, Number.POSITIVE_INFINITY, 2.7]))
    expect(rects(svg).map((r) => r.title)).toEqual(['hour 3: 2'])
    expect(svg).not.toMatch(/NaN|Infinity/)
  })
})

describe('scaleTop', () => {
  it('is the smallest 1, 2 or 5 times a power of ten that holds the largest count', () => {
    expect([0, 1, 2, 3, 7, 10, 12, 100, 101, 999, 1e12 + 1].map(scaleTop)).toEqual([1, 1, 2, 5, 10, 10, 20, 100, 200, 1000, 2e12])
  })
})
