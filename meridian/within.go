package meridian

import "slices"

// uniqueWithinRecord runs unique_within_record: a row is unexpected when two of its
// non-null values in the listed columns are equal (the equality of unique: JSON by type
// and value, CSV by text). Rows are skipped, and counted in missing_count, by
// ignore_row_if: all_values_are_missing (the default, as in Great Expectations) skips rows
// whose listed values are all null, any_value_is_missing rows with a null, never none.
// Nulls are never equal to each other. An unexpected row is shown as the array of its
// values in the order of the columns.
func (e *evaluation) uniqueWithinRecord(cr *CheckResult, c *compiled) {
	ds := e.ds
	cols := make([]*column, len(c.columns))
	ids := make([][]uint32, len(c.columns)) // per column: dictionary id → shared id
	for j, name := range c.columns {
		cols[j] = ds.column(name)
		if ids[j] = e.sharedIDs(cols[j]); ids[j] == nil {
			return // ctx ended
		}
	}
	vals := make([]uint32, 0, len(cols))
	missing, u := 0, 0
	for row := 0; row < ds.rows; row++ {
		if e.stopped(row) {
			return
		}
		vals = vals[:0]
		for j, col := range cols {
			if id := col.ids[row]; id != 0 {
				vals = append(vals, ids[j][id])
			}
		}
		switch {
		case len(vals) == 0 && c.ignoreRowIf != ignoreNever,
			len(vals) < len(cols) && c.ignoreRowIf == ignoreAny:
			missing++
			continue
		}
		if !repeats(vals) {
			continue
		}
		u++
		if len(cr.PartialUnexpectedIndexList) < partialLimit {
			tuple := make([]any, len(cols))
			for j, col := range cols {
				tuple[j] = e.show(col, col.ids[row])
			}
			cr.PartialUnexpectedList = append(cr.PartialUnexpectedList, tuple)
			cr.PartialUnexpectedIndexList = append(cr.PartialUnexpectedIndexList, row)
		}
	}
	e.uniU += u
	e.uniN += ds.rows - missing
	finishRow(cr, c, u, missing)
}

// repeats reports whether two entries of vals are equal; it may reorder vals. Small rows
// compare every pair; wide ones sort.
func repeats(vals []uint32) bool {
	if len(vals) > 16 {
		slices.Sort(vals)
		for i := 1; i < len(vals); i++ {
			if vals[i] == vals[i-1] {
				return true
			}
		}
		return false
	}
	for i := 1; i < len(vals); i++ {
		for _, v := range vals[:i] {
			if v == vals[i] {
				return true
			}
		}
	}
	return false
}

// sharedIDs maps the distinct values of col to ids shared by every column of the
// evaluation (equal values, equal ids; nulls stay 0), so values of different columns
// compare as integers. It returns nil when ctx has ended.
func (e *evaluation) sharedIDs(col *column) []uint32 {
	if e.keys == nil {
		e.keys = map[string]uint32{}
	}
	out := make([]uint32, len(col.dict.count))
	for id := 1; id < len(out); id++ {
		if e.stopped(id) {
			return nil
		}
		k := col.dict.key(uint32(id))
		v, ok := e.keys[string(k)]
		if !ok {
			v = uint32(len(e.keys) + 1)
			e.keys[string(k)] = v
		}
		out[id] = v
	}
	return out
}
