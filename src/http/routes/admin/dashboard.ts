import { type BarPattern, barChartSvg } from '../../../lib/bar-chart.js'
import { ACTIVITY_KEYS, type Activity, type ActivityKey, type ActivityPeriod } from '../../../operator/index.js'

/*
 * What /admin shows of the operator's activity counts (docs/operating/admin.md "The dashboard"): a chart
 * per series and period, drawn on the server (src/lib/bar-chart.ts), its total as text beside it,
 * and every count in a table. Times are UTC, as the counts' hours and days are.
 */

const SERIES: Record<ActivityKey, { words: string; pattern: BarPattern }> = {
  signIns: { words: 'Sign-ins', pattern: 'solid' },
  failedLogIns: { words: 'Failed log-ins', pattern: 'hatched' },
  tokensIssued: { words: 'Tokens issued', pattern: 'dotted' },
  tokensRevoked: { words: 'Tokens revoked', pattern: 'crossed' },
  newApplications: { words: 'New applications', pattern: 'outlined' },
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const pad = (n: number) => String(n).padStart(2, '0')
const hourOf = (d: Date) => `${pad(d.getUTCHours())}:00`
const dayOf = (d: Date) => `${WEEKDAYS[d.getUTCDay()]} ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`
const number = new Intl.NumberFormat('en')

export interface DashboardChart {
  id: string
  words: string
  total: string
  svg: string
}

export interface DashboardPeriod {
  id: string
  heading: string
  /** What a bucket is, for the table's first column and the note under the heading. */
  bucket: string
  charts: DashboardChart[]
  columns: string[]
  rows: Array<{ label: string; counts: string[] }>
  totals: string[]
}

interface PeriodWords {
  id: string
  heading: string
  bucket: string
  /** The bucket starting at `start`, in full. */
  label(start: Date, end: Date): string
  /** Under the axis: a few buckets named, the others not. */
  tick(start: Date): string
}

const PERIODS: Record<'hours' | 'days', PeriodWords> = {
  hours: {
    id: 'last-24-hours',
    heading: 'Last 24 hours',
    bucket: 'Hour (UTC)',
    label: (start, end) => `${dayOf(start)}, ${hourOf(start)}–${hourOf(end)}`,
    tick: (start) => (start.getUTCHours() % 6 === 0 ? hourOf(start) : ''),
  },
  days: {
    id: 'last-7-days',
    heading: 'Last 7 days',
    bucket: 'Day (UTC)',
    label: (start) => dayOf(start),
    tick: (start) => `${WEEKDAYS[start.getUTCDay()]} ${start.getUTCDate()}`,
  },
}

function describe(words: string, counts: number[], labels: string[], per: string): string {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0) return `${words}: none.`
  const most = Math.max(...counts)
  return `${words}: ${number.format(total)} in all; the most in one ${per}, ${number.format(most)}, ${labels[counts.indexOf(most)]}.`
}

function period(p: ActivityPeriod, words: PeriodWords, per: string): DashboardPeriod {
  const labels = p.starts.map((start) => words.label(start, new Date(start.getTime() + p.bucketMs)))
  const charts = ACTIVITY_KEYS.map((key) => {
    const counts = p.counts[key]
    const id = `${words.id}-${key}`
    const { words: name, pattern } = SERIES[key]
    const svg = barChartSvg({
      id: `chart-${id}`,
      title: `${name} per ${per}, ${words.heading.toLowerCase()}`,
      description: describe(name, counts, labels, per),
      pattern,
      bars: counts.map((value, i) => ({ value, label: labels[i]!, tick: words.tick(p.starts[i]!) })),
    })
    return { id, words: name, total: number.format(counts.reduce((a, b) => a + b, 0)), svg }
  })
  return {
    id: words.id,
    heading: words.heading,
    bucket: words.bucket,
    charts,
    columns: ACTIVITY_KEYS.map((key) => SERIES[key].words),
    // Newest first, as the audit log reads.
    rows: labels.map((label, i) => ({ label, counts: ACTIVITY_KEYS.map((key) => number.format(p.counts[key][i]!)) })).reverse(),
    totals: charts.map((c) => c.total),
  }
}

/** The dashboard's part of the /admin page's data. */
export function dashboardView(activity: Activity): { periods: DashboardPeriod[]; countedAt: string } {
  const at = activity.countedAt
  return {
    periods: [period(activity.hours, PERIODS.hours, 'hour'), period(activity.days, PERIODS.days, 'day')],
    countedAt: `${dayOf(at)} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())} UTC`,
  }
}
