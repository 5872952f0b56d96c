package meridian

import (
	"context"
	"hash/maphash"
	"math"
)

func hashBytes(d *Dataset, b []byte) uint64 { return maphash.Bytes(d.seed, b) }

// topValues is the number of most frequent values a column profile lists.
const topValues = 5

// Inferred types, narrowest first.
var inferOrder = []struct {
	name string
	flag uint8
}{{"boolean", fBool}, {"integer", fInteger}, {"number", fNumber}, {"timestamp", fTimestamp}, {"string", fString}}

// newProfile returns the dataset's profile with its columns still to fill (profileInto).
func (d *Dataset) newProfile() *Profile {
	return &Profile{RowCount: d.rows, Columns: make([]ColumnProfile, len(d.cols))}
}

// profileInto fills column j of p, unless ctx has ended.
func (d *Dataset) profileInto(ctx context.Context, p *Profile, j int) {
	if ctx.Err() == nil {
		p.Columns[j] = d.profileColumn(ctx, d.cols[j])
	}
}

func (d *Dataset) profileColumn(ctx context.Context, c *column) ColumnProfile {
	dict := &c.dict
	cp := ColumnProfile{
		Name:          c.name,
		NullCount:     d.rows - c.nonNull,
		DistinctCount: dict.size(),
		TopValues:     []TopValue{},
	}
	if d.rows > 0 {
		cp.NullPercent = ptr(100 * float64(cp.NullCount) / float64(d.rows))
	}
	if dict.size() > 0 {
		all := uint8(0xFF)
		for id := 1; id < len(dict.count); id++ {
			all &= dict.flags[id]
		}
		t := d.otherType(c)
		for _, o := range inferOrder {
			if all&o.flag != 0 {
				t = o.name
				break
			}
		}
		cp.InferredType = &t
		switch t {
		case "integer", "number":
			// The summary a check computed, or one made for this profile alone: keeping it
			// would hold 24 bytes per distinct number of every column until the end.
			c.cacheMu.Lock() // checks running beside the profile may be making it
			s := c.stats
			c.cacheMu.Unlock()
			if s == nil {
				s = c.summary()
			}
			cp.Min, cp.Max = ptr(s.min()), ptr(s.max())
			cp.Mean, cp.Stddev = ptr(s.mean()), ptr(s.stddev())
			cp.P05, cp.P50, cp.P95 = ptr(s.quantile(0.05)), ptr(s.quantile(0.5)), ptr(s.quantile(0.95))
		case "string", "timestamp":
			lo, hi := math.MaxInt, 0
			for id := 1; id < len(dict.count); id++ {
				if id%ctxEvery == 0 && ctx.Err() != nil {
					return cp
				}
				n := runeLen(d.text(c, uint32(id)))
				lo, hi = min(lo, n), max(hi, n)
			}
			cp.MinLength, cp.MaxLength = &lo, &hi
		}
	}
	// Top values: highest count first, ties by first appearance (= lower id).
	var top [topValues]uint32
	k := 0
	for id := 1; id < len(dict.count); id++ {
		cnt := dict.count[id]
		if k == topValues && cnt <= dict.count[top[k-1]] {
			continue
		}
		j := min(k, topValues-1)
		for j > 0 && dict.count[top[j-1]] < cnt {
			top[j] = top[j-1]
			j--
		}
		top[j] = uint32(id)
		if k < topValues {
			k++
		}
	}
	for _, id := range top[:k] {
		cp.TopValues = append(cp.TopValues, TopValue{Value: d.display(c, id), Count: int(dict.count[id])})
	}
	return cp
}

// otherType names the type of a column none of the five types fits: "object" or "array"
// when every value is one, else "mixed".
func (d *Dataset) otherType(c *column) string {
	if d.format != formatJSON {
		return "mixed" // CSV keys are the text itself, untagged: "o" is a value, not a tag
	}
	var kinds [256]bool
	n := 0
	for id := 1; id < len(c.dict.count); id++ {
		k := c.dict.key(uint32(id))
		b := byte(0)
		if k[0] == tagOther && len(k) > 1 {
			b = k[1]
		}
		if !kinds[b] {
			kinds[b] = true
			n++
		}
	}
	switch {
	case n == 1 && kinds['{']:
		return "object"
	case n == 1 && kinds['[']:
		return "array"
	}
	return "mixed"
}
