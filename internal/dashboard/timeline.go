package dashboard

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"riskapi/drift"
)

// The agent timeline (shared/spec/agents.md §2): the benefit share of the agent's top
// parties over its events, the change point and each monitor alert marked.

const (
	// timelineBuckets is how many points each party's line has: events are grouped in this
	// many equal runs, in time order.
	timelineBuckets = 40
	// timelineParties is how many parties get a line: those with the most benefit in all.
	timelineParties = 4
)

// timelineMark is a vertical marker at an event position.
type timelineMark struct {
	At    int    // event index in time order
	Label string // shown in the marker's title
	Alert bool   // an alert (red); otherwise the change point (dashed)
}

// agentTimeline is the shares of the top parties per bucket.
type agentTimeline struct {
	Events []drift.Event // in time order (stable)
	Series []chartSeries // one per top party: its share of non-principal benefit per bucket
	Ends   []int         // the event index each bucket ends before
}

// newAgentTimeline orders the events by time (stable, as the analysis does) and measures the
// benefit share of the timelineParties parties with the most benefit in each of
// timelineBuckets runs of events. principal names the principal ("" for none): its benefit,
// and the literal "principal"'s, does not count, as in the analysis.
func newAgentTimeline(events []drift.Event, principal string) agentTimeline {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b drift.Event) int { return a.Timestamp.Compare(b.Timestamp) })
	tl := agentTimeline{Events: events}
	n := len(events)
	if n == 0 {
		return tl
	}
	buckets := min(timelineBuckets, n)
	total := map[string]float64{}
	isPrincipal := func(p string) bool { return p == "principal" || (principal != "" && p == principal) }
	for _, e := range events {
		for _, b := range e.Beneficiaries {
			if !isPrincipal(b.Party) && b.Value > 0 {
				total[b.Party] += b.Value
			}
		}
	}
	parties := make([]string, 0, len(total))
	for p := range total {
		parties = append(parties, p)
	}
	slices.SortFunc(parties, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(a, b)) })
	parties = parties[:min(len(parties), timelineParties)]
	for _, p := range parties {
		tl.Series = append(tl.Series, chartSeries{Name: p, Values: make([]float64, buckets)})
	}
	for k := range buckets {
		lo, hi := k*n/buckets, (k+1)*n/buckets
		tl.Ends = append(tl.Ends, hi)
		all := 0.0
		of := make([]float64, len(parties))
		for _, e := range events[lo:hi] {
			for _, b := range e.Beneficiaries {
				if isPrincipal(b.Party) || !(b.Value > 0) {
					continue
				}
				all += b.Value
				if i := slices.Index(parties, b.Party); i >= 0 {
					of[i] += b.Value
				}
			}
		}
		for i := range parties {
			if all > 0 {
				tl.Series[i].Values[k] = of[i] / all
			}
		}
	}
	return tl
}

// indexAt is the index of the first event at or after t (len(events) when none is).
func (tl agentTimeline) indexAt(t time.Time) int {
	i, _ := slices.BinarySearchFunc(tl.Events, t, func(e drift.Event, t time.Time) int { return e.Timestamp.Compare(t) })
	return i
}

// chart draws the lines, with the marks, as an SVG that scales with the page.
func (tl agentTimeline) chart(label string, marks []timelineMark) template.HTML {
	var b strings.Builder
	svgOpen(&b, label)
	plotW, plotH := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	n := len(tl.Events)
	if n == 0 || len(tl.Series) == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="15" text-anchor="middle" fill="#6b7280">No benefit recorded in this agent's events</text></svg>`,
			num(chartW/2), num(chartH/2))
		return template.HTML(b.String())
	}
	// The y axis in percent of benefit.
	for i := 0; i <= 4; i++ {
		y := chartTop + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#d1d5db" stroke-width="1"/>`, num(chartLeft), num(y), num(chartW-chartRight), num(y))
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="end" fill="#4b5563">%d %%</text>`, num(chartLeft-6), num(y+4), 25*i)
	}
	xOf := func(index float64) float64 { return chartLeft + plotW*index/float64(n) }
	x := chartLeft
	for i, s := range tl.Series {
		fmt.Fprintf(&b, `<rect x="%s" y="10" width="12" height="12" fill="%s"/>`, num(x), palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%s" y="20" font-size="13" fill="#111827">%s</text>`, num(x+16), esc(s.Name))
		x += 16 + 8*float64(len([]rune(s.Name))) + 18
	}
	for i, s := range tl.Series {
		var pts []string
		lo := 0
		for k, v := range s.Values {
			mid := float64(lo+tl.Ends[k]) / 2
			pts = append(pts, num(xOf(mid))+","+num(chartTop+plotH-plotH*v))
			lo = tl.Ends[k]
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"><title>%s: share of benefit</title></polyline>`,
			strings.Join(pts, " "), palette[i%len(palette)], esc(s.Name))
	}
	for _, m := range marks {
		mx := xOf(float64(min(max(m.At, 0), n)))
		if m.Alert {
			fmt.Fprintf(&b, `<g class="alert"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dc2626" stroke-width="2"/><circle cx="%s" cy="%s" r="6" fill="#dc2626"/><title>%s</title></g>`,
				num(mx), num(chartTop), num(mx), num(chartTop+plotH), num(mx), num(chartTop), esc(m.Label))
			continue
		}
		fmt.Fprintf(&b, `<g class="change-point"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#111827" stroke-width="2" stroke-dasharray="6 4"/><title>%s</title></g>`,
			num(mx), num(chartTop), num(mx), num(chartTop+plotH), esc(m.Label))
	}
	// The x axis: dates of the first, middle and last events.
	for _, at := range []int{0, n / 2, n - 1} {
		anchor := "middle"
		switch at {
		case 0:
			anchor = "start"
		case n - 1:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="%s" fill="#4b5563">%s</text>`,
			num(xOf(float64(at))), num(chartTop+plotH+18), anchor, esc(tl.Events[at].Timestamp.UTC().Format("2006-01-02")))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
