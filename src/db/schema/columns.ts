import type { ColumnType } from 'kysely'

/** A timestamp column, read and written as a Date. */
export type Timestamp = ColumnType<Date, Date, Date>

/** A column of a view: read, never written. */
export type ViewColumn<T> = ColumnType<T, never, never>
