package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Charts are SVG drawn on the server: no script, no external library, and they scale with the
// page (viewBox with width 100%), so they read at 390 px as at 1280 px. Colours are SVG
// presentation attributes, which the Content-Security-Policy allows (inline style would not
// be). Every chart carries a text alternative, and every page shows its numbers in a table too.

// palette holds the series colours: distinguishable, and dark enough for white text.
var palette = []string{"#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2"}

// chartSeries is one stacked series of a bar chart.
type chartSeries struct {
	Name   string
	Values []float64 // one per label
}

const (
	chartW      = 720.0
	chartH      = 280.0
	chartLeft   = 56.0
	chartRight  = 12.0
	chartTop    = 36.0
	chartBottom = 40.0
)

func esc(s string) string { return template.HTMLEscapeString(s) }

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so axis ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func axisLabel(v float64) string {
	if v == math.Trunc(v) {
		return formatInt(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// svgOpen starts a chart with its accessible name.
func svgOpen(b *strings.Builder, label string) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %s %s" width="100%%" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		num(chartW), num(chartH), esc(label))
	fmt.Fprintf(b, `<title>%s</title>`, esc(label))
}

// yAxis draws four horizontal grid lines with their values, from 0 to top.
func yAxis(b *strings.Builder, top float64, plotH float64) {
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := chartTop + plotH - plotH*float64(i)/4
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#d1d5db" stroke-width="1"/>`, num(chartLeft), num(y), num(chartW-chartRight), num(y))
		fmt.Fprintf(b, `<text x="%s" y="%s" font-size="12" text-anchor="end" fill="#4b5563">%s</text>`, num(chartLeft-6), num(y+4), esc(axisLabel(v)))
	}
}

// stackedBarChart draws one bar per label with the series stacked on it, a legend on top and
// every labelEvery-th label under the axis.
func stackedBarChart(label string, labels []string, series []chartSeries, labelEvery int) template.HTML {
	var b strings.Builder
	svgOpen(&b, label)
	plotW, plotH := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	total := 0.0
	maxTotal := 0.0
	for i := range labels {
		sum := 0.0
		for _, s := range series {
			if i < len(s.Values) && s.Values[i] > 0 {
				sum += s.Values[i]
			}
		}
		total += sum
		maxTotal = max(maxTotal, sum)
	}
	top := niceCeil(maxTotal)
	yAxis(&b, top, plotH)
	x := chartLeft
	for i, s := range series {
		fmt.Fprintf(&b, `<rect x="%s" y="10" width="12" height="12" fill="%s"/>`, num(x), palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%s" y="20" font-size="13" fill="#111827">%s</text>`, num(x+16), esc(s.Name))
		x += 16 + 9*float64(len(s.Name)) + 18
	}
	if n := len(labels); n > 0 {
		slot := plotW / float64(n)
		barW := math.Max(1, slot*0.7)
		for i, l := range labels {
			bx := chartLeft + slot*float64(i) + (slot-barW)/2
			base := chartTop + plotH
			for j, s := range series {
				if i >= len(s.Values) || s.Values[i] <= 0 {
					continue
				}
				hgt := plotH * s.Values[i] / top
				base -= hgt
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s %s: %s</title></rect>`,
					num(bx), num(base), num(barW), num(hgt), palette[j%len(palette)], esc(l), esc(s.Name), esc(axisLabel(s.Values[i])))
			}
			if labelEvery > 0 && i%labelEvery == 0 {
				fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" fill="#4b5563">%s</text>`,
					num(bx+barW/2), num(chartTop+plotH+18), esc(l))
			}
		}
	}
	if total == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="15" text-anchor="middle" fill="#6b7280">No requests in this period</text>`,
			num(chartLeft+plotW/2), num(chartTop+plotH/2))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histogramChart draws the bins [edges[i], edges[i+1]) with their counts. len(edges) must be
// len(counts)+1; anything else draws an empty chart.
func histogramChart(label, xTitle string, edges []float64, counts []float64) template.HTML {
	var b strings.Builder
	svgOpen(&b, label)
	plotW, plotH := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	if len(edges) != len(counts)+1 || len(counts) == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="15" text-anchor="middle" fill="#6b7280">No histogram</text></svg>`,
			num(chartW/2), num(chartH/2))
		return template.HTML(b.String())
	}
	maxCount := 0.0
	for _, c := range counts {
		maxCount = max(maxCount, c)
	}
	top := niceCeil(maxCount)
	yAxis(&b, top, plotH)
	fmt.Fprintf(&b, `<text x="%s" y="20" font-size="13" fill="#111827">%s</text>`, num(chartLeft), esc(xTitle))
	slot := plotW / float64(len(counts))
	for i, c := range counts {
		x := chartLeft + slot*float64(i)
		hgt := 0.0
		if c > 0 {
			hgt = plotH * c / top
		}
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#ffffff" stroke-width="1"><title>%s–%s: %s</title></rect>`,
			num(x), num(chartTop+plotH-hgt), num(slot), num(hgt), palette[0], esc(edgeLabel(edges[i])), esc(edgeLabel(edges[i+1])), esc(axisLabel(c)))
	}
	for i, e := range edges {
		if len(edges) > 6 && i%2 == 1 && i != len(edges)-1 {
			continue
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" fill="#4b5563">%s</text>`,
			num(chartLeft+slot*float64(i)), num(chartTop+plotH+18), esc(edgeLabel(e)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func edgeLabel(e float64) string { return strconv.FormatFloat(e, 'f', -1, 64) }

// meterChart draws how much of a limit is used: green below 75 %, amber below 100 %, red at
// the limit.
func meterChart(label string, used, limit int64) template.HTML {
	frac := 0.0
	if limit > 0 {
		frac = math.Min(1, float64(used)/float64(limit))
	} else if used > 0 {
		frac = 1
	}
	color := "#059669"
	switch {
	case frac >= 1:
		color = "#dc2626"
	case frac >= 0.75:
		color = "#d97706"
	}
	const w, h = 400.0, 14.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="meter" viewBox="0 0 %s %s" width="100%%" height="14" preserveAspectRatio="none" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		num(w), num(h), esc(label))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(label))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" rx="3" fill="#e5e7eb"/>`, num(w), num(h))
	if frac > 0 {
		fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" rx="3" fill="%s"/>`, num(math.Max(2, w*frac)), num(h), color)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
