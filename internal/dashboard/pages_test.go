package dashboard

import (
	"context"
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

var svgPattern = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// checkSVG parses every chart of a page as XML and returns them.
func checkSVG(t *testing.T, page string) []string {
	t.Helper()
	charts := svgPattern.FindAllString(page, -1)
	for _, c := range charts {
		d := xml.NewDecoder(strings.NewReader(c))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chart is not well-formed: %v\n%s", err, c)
			}
		}
	}
	return charts
}

// Every page renders in both modes, with results of every product and with none, fits a phone
// (viewport meta, no inline style the CSP would block), and draws well-formed charts.
func TestPagesRenderWithAndWithoutData(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	acct, u := b.newUser(store.PlanStarter)
	empty := b.browser()
	_, u2 := b.newUser(store.PlanFreeTrial)
	empty.signIn(u2)

	now := b.clock.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if err := b.store.AddUsage(ctx, []store.UsageUnits{
		{AccountID: acct.ID, Day: today, Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 40},
		{AccountID: acct.ID, Day: today.AddDate(0, 0, -3), Product: "meridian", Endpoint: "POST /v1/meridian/quality-check", Units: 7},
	}); err != nil {
		t.Fatal(err)
	}
	analyses := []store.Analysis{
		{ID: ident.New("dra"), Product: "drift", Subject: "agent_7", Payload: []byte(`{"shadow_principal_detected":true,"score":23.5,"risk_band":"critical"}`)},
		{ID: ident.New("cva"), Product: "convergence", Subject: "fuel-north", Payload: []byte(`{"collusion_detected":false,"score":81,"risk_band":"low"}`)},
		{ID: ident.New("mqc"), Product: "meridian", Subject: "prices-feed", Payload: []byte(`{"passed":false,"score":42.1,"tier":"bronze"}`)},
		{ID: ident.New("dra"), Product: "drift", Subject: "agent_8", Payload: []byte(`not json`)},
	}
	for _, a := range analyses {
		a.AccountID, a.Mode, a.CreatedAt = acct.ID, store.ModeTest, now
		if err := b.store.CreateAnalysis(ctx, a, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	sim := store.Simulation{ID: ident.New("csm"), AccountID: acct.ID, Mode: store.ModeTest, Status: store.SimulationCompleted,
		Request: []byte(`{}`), CreatedAt: now, UpdatedAt: now,
		Payload: []byte(`{"systemic_risk_detected":true,"score":41.2,"risk_band":"high","scenarios":[{"name":"one random failure",
			"histogram":{"edges":[0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1],"counts":[600,200,100,50,20,10,10,5,3,2]}}]}`)}
	if err := b.store.CreateSimulation(ctx, sim, nil, nil); err != nil {
		t.Fatal(err)
	}

	br := b.browser()
	br.signIn(u)
	pages := []string{"/dashboard/settings", "/dashboard/settings/keys", "/dashboard/settings/keys/new", "/dashboard/usage",
		"/dashboard/webhooks", "/dashboard/analyses"}
	for _, mode := range []string{"test", "live"} {
		for _, who := range []*browser{br, empty} {
			who.get("/dashboard/settings")
			wantRedirect(t, "mode", who.post("/dashboard/mode", url.Values{"mode": {mode}, "back": {"/dashboard/settings"}}), "/dashboard/settings")
			for _, p := range pages {
				res := who.get(p)
				wantStatus(t, p+" in "+mode+" mode", res, http.StatusOK)
				if !strings.Contains(res.body, `<meta name="viewport" content="width=device-width, initial-scale=1">`) {
					t.Fatalf("%s has no viewport meta", p)
				}
				if strings.Contains(res.body, "style=") || strings.Contains(res.body, "<script>") {
					t.Fatalf("%s has inline style or script", p)
				}
				checkSVG(t, res.body)
			}
		}
	}

	br.get("/dashboard/settings")
	br.post("/dashboard/mode", url.Values{"mode": {"test"}})
	page := br.get("/dashboard/analyses").body
	for _, want := range []string{analyses[0].ID, "Shadow principal detected", "23.5", "critical", "fuel-north", "No collusion",
		"prices-feed", "Failed", "bronze", analyses[3].ID, sim.ID, "Systemic risk", "one random failure"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Analyses page lacks %q", want)
		}
	}
	// The histogram's bars are proportional to the counts: 600 on an axis topped at 1,000.
	charts := checkSVG(t, page)
	if len(charts) != 1 {
		t.Fatalf("%d charts on the Analyses page, want the Cascade histogram", len(charts))
	}
	heights := barHeights(t, charts[0])
	if len(heights) != 10 {
		t.Fatalf("histogram has %d bars, want 10", len(heights))
	}
	plotH := chartH - chartTop - chartBottom
	if math.Abs(heights[0]-plotH*0.6) > 0.1 || math.Abs(heights[1]-plotH*0.2) > 0.1 {
		t.Fatalf("bar heights %v, want %.1f and %.1f first", heights, plotH*0.6, plotH*0.2)
	}

	// Live usage: 40 Drift units today and 7 Meridian three days ago, in the chart and the tables.
	br.post("/dashboard/mode", url.Values{"mode": {"live"}})
	page = br.get("/dashboard/usage").body
	for _, want := range []string{today.Format("2006-01-02"), ">40<", ">7<", "Drift (per hour)", "of 1,000 used"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Usage page lacks %q", want)
		}
	}
	if !strings.Contains(page, "11-21 Drift: 40") || !strings.Contains(page, "11-18 Meridian: 7") {
		t.Error("the usage chart does not draw the day's units")
	}
}

var rectHeight = regexp.MustCompile(`<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)" fill="#2563eb"`)

func barHeights(t *testing.T, svg string) []float64 {
	var out []float64
	for _, m := range rectHeight.FindAllStringSubmatch(svg, -1) {
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// The Usage page shows how much of each limit this hour's requests used, including a key's own.
func TestUsageShowsRateLimitState(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanFreeTrial)
	br := b.browser()
	br.signIn(u)
	key := br.generate(url.Values{"type": {"restricted"}, "mode": {"test"}, "scopes": {"drift:read"}, "rate_limit": {"5"}, "name": {"tiny"}})
	for range 3 {
		b.api(http.MethodGet, "/v1/drift/analyses", key, "")
	}
	page := br.get("/dashboard/usage").body
	for _, want := range []string{"Test mode, every endpoint (per UTC day)", "3 of 1,000 used", "(tiny) (per hour)", "3 of 5 used", "2 left"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Usage page lacks %q", want)
		}
	}
}

func TestCharts(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 7: 10, 40: 50, 101: 200, 600: 1000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
	// Text is escaped, so a product or scenario name cannot inject markup.
	svg := string(stackedBarChart(`<script>"x"</script>`, []string{"a<b"}, []chartSeries{{Name: "D&D", Values: []float64{3}}}, 1))
	if strings.Contains(svg, "<script>") || !strings.Contains(svg, "D&amp;D") {
		t.Fatalf("chart text is not escaped: %s", svg)
	}
	checkSVG(t, svg)
	if !strings.Contains(string(histogramChart("h", "x", []float64{0, 1}, []float64{1, 2})), "No histogram") {
		t.Error("a histogram with mismatched edges and counts must draw nothing")
	}
	full := string(meterChart("m", 12, 10))
	if !strings.Contains(full, `fill="#dc2626"`) {
		t.Errorf("an exhausted limit is not drawn red: %s", full)
	}
}
