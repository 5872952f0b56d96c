package meridian

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Scenario names accepted by Generate: the test-mode scenarios of POST /v1/test/generate.
const (
	ScenarioClean = "clean"
	ScenarioDirty = "dirty"
)

// Formats of the generated data.
const (
	FormatRecords = "records"
	FormatCSV     = "csv"
)

// Injection kinds of a dirty scenario.
const (
	InjectNulls      = "nulls"
	InjectDuplicates = "duplicates"
	InjectOutOfRange = "out_of_range"
	InjectBadFormat  = "bad_format"
	InjectNotInSet   = "not_in_set"
	InjectStale      = "stale_timestamps"
	InjectOutliers   = "outliers"
)

// TestModeScenarios lists the meridian scenarios of POST /v1/test/generate.
func TestModeScenarios() []string { return []string{ScenarioClean, ScenarioDirty} }

// IsScenario reports whether Generate accepts the scenario.
func IsScenario(s string) bool { return s == ScenarioClean || s == ScenarioDirty }

// GenParams tunes Generate. Zero fields take the defaults given; a field drawn at random is
// drawn from the seed's stream, so the output stays a function of the seed.
type GenParams struct {
	// Rows of data; 0 draws uniformly from [300, 1500].
	Rows int
	// ErrorRate is the share of rows each injection of a dirty scenario touches (at least one
	// row); 0 draws from [0.02, 0.06].
	ErrorRate float64
	// StaleDays is the age of the newest created_at in a dirty scenario, in days (> 1);
	// 0 draws from [2, 6].
	StaleDays float64
	// Format is FormatRecords (default) or FormatCSV.
	Format string
}

// Injection is one kind of error planted at known rows.
type Injection struct {
	Kind    string `json:"kind"`
	Column  string `json:"column"`
	CheckID string `json:"check_id"`
	// Count is the number of rows changed; Rows their 0-based indices, ascending.
	Count int   `json:"count"`
	Rows  []int `json:"rows"`
	// UnexpectedCount is the unexpected_count the check must report (for duplicates both the
	// copied row and its original count, so twice Count).
	UnexpectedCount int `json:"unexpected_count"`
}

// Truth is what the generator planted and the verdict it implies.
type Truth struct {
	Scenario string `json:"scenario"`
	Format   string `json:"format"`
	Rows     int    `json:"rows"`
	// Passed, Score, Tier, Gating and Dimensions are computed from the planted counts with the
	// formulas of docs/methods/meridian.md, not by running the engine.
	Passed     bool       `json:"passed"`
	Score      float64    `json:"score"`
	Tier       string     `json:"tier"`
	Gating     string     `json:"gating"`
	Dimensions Dimensions `json:"dimensions"`
	// FailingChecks are the ids of the checks that must fail, in request order (the
	// unit-price outliers check has severity warning and does not decide Passed).
	FailingChecks []string    `json:"failing_checks"`
	Injected      []Injection `json:"injected"`
	// NewestAgeSeconds is the age of the newest created_at at as_of (the freshness check's
	// observed_value).
	NewestAgeSeconds float64 `json:"newest_age_seconds"`
}

// Generated check ids.
const (
	genOrderIDNotNull   = "order_id_not_null"
	genOrderIDUnique    = "order_id_unique"
	genAmountNotNull    = "amount_not_null"
	genAmountRange      = "amount_range"
	genQuantityInteger  = "quantity_integer"
	genStatusValid      = "status_valid"
	genEmailFormat      = "email_format"
	genUpdatedAfter     = "updated_after_created"
	genUnitPriceOutlier = "unit_price_outliers"
	genCreatedFresh     = "created_at_fresh"
	genRowCount         = "row_count"
	genRequiredColumns  = "required_columns"
)

var (
	genColumns  = []string{"order_id", "customer_email", "amount", "quantity", "unit_price", "status", "created_at", "updated_at"}
	genStatuses = []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	genNames    = []string{"ana", "ben", "chen", "dara", "eli", "fatima", "gus", "hana", "ivan", "jo", "kofi", "lena", "mia", "noor", "omar", "pia"}
	genDomains  = []string{"example.com", "mail.example.org", "shop.example.net"}
)

// genRow is one generated row; nil pointers are nulls, raw values are written as they are.
type genRow struct {
	orderID, email, status string
	amount                 *float64
	quantity, unitPrice    float64
	created, updated       time.Time
}

// Generate produces a quality-check request over an orders table (8 columns, 12 checks,
// declared signals) deterministically from seed (math/rand/v2 PCG), with the truth it
// implies. clean data passes every check; dirty data has nulls, duplicates, out-of-range
// amounts, bad formats, unknown statuses, updates before creation and unit-price outliers
// planted at known rows, and a stale feed. An unknown scenario yields an empty Request and
// Truth; validate with IsScenario first.
func Generate(scenario string, seed int64, gp GenParams) (Request, Truth) {
	if !IsScenario(scenario) {
		return Request{}, Truth{Scenario: scenario}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6d65726964696e))
	n := gp.Rows
	if n <= 0 {
		n = 300 + r.IntN(1201)
	}
	rate := gp.ErrorRate
	if rate <= 0 {
		rate = 0.02 + 0.04*r.Float64()
	}
	staleDays := gp.StaleDays
	if staleDays <= 1 {
		staleDays = 2 + 4*r.Float64()
	}
	format := gp.Format
	if format != FormatCSV {
		format = FormatRecords
	}
	dirty := scenario == ScenarioDirty
	asOf := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(180*24)) * time.Hour)
	lag := time.Duration(r.IntN(6*3600)) * time.Second // clean feeds are at most 6 h behind
	if dirty {
		lag = time.Duration(staleDays * 24 * float64(time.Hour)).Round(time.Second)
	}
	newest := asOf.Add(-lag)
	span := 30 * 24 * time.Hour
	base := 1_000_000 + r.IntN(8_000_000)

	rows := make([]genRow, n)
	for i := range rows {
		a := math.Round((5+495*r.Float64())*100) / 100
		created := newest.Add(-span + time.Duration(float64(span)*float64(i+1)/float64(n))).Truncate(time.Second)
		rows[i] = genRow{
			orderID:   fmt.Sprintf("ord-%07d", base+i),
			email:     fmt.Sprintf("%s.%s%d@%s", genNames[r.IntN(len(genNames))], genNames[r.IntN(len(genNames))], r.IntN(1000), genDomains[r.IntN(len(genDomains))]),
			status:    genStatuses[r.IntN(len(genStatuses))],
			amount:    &a,
			quantity:  float64(1 + r.IntN(10)),
			unitPrice: math.Round((5+45*r.Float64())*100) / 100,
			created:   created,
			updated:   created.Add(time.Duration(r.IntN(6*3600)) * time.Second),
		}
	}
	rows[n-1].created = newest
	rows[n-1].updated = newest

	tr := Truth{Scenario: scenario, Format: format, Rows: n, Injected: []Injection{}, FailingChecks: []string{}}
	if dirty {
		k := max(1, int(math.Round(rate*float64(n))))
		k = min(k, n/4)
		perm := r.Perm(n)
		pick := func(m int) []int { // m rows not picked before for the same column
			out := slices.Clone(perm[:m])
			perm = perm[m:]
			return out
		}
		inject := func(kind, column, check string, at []int, unexpected int) {
			sorted := slices.Clone(at)
			slices.Sort(sorted)
			tr.Injected = append(tr.Injected, Injection{Kind: kind, Column: column, CheckID: check, Count: len(at), Rows: sorted, UnexpectedCount: unexpected})
		}
		// amount: nulls and out-of-range values at disjoint rows.
		at := pick(k)
		for _, i := range at {
			rows[i].amount = nil
		}
		inject(InjectNulls, "amount", genAmountNotNull, at, k)
		at = pick(k)
		for _, i := range at {
			v := -math.Round((1+499*r.Float64())*100) / 100
			if r.IntN(2) == 0 {
				v = math.Round((5000.01+15000*r.Float64())*100) / 100
			}
			rows[i].amount = &v
		}
		inject(InjectOutOfRange, "amount", genAmountRange, at, k)
		// order_id: each target row takes the id of a distinct source row.
		perm = r.Perm(n)
		targets, sources := pick(k), pick(k)
		dupRows := slices.Concat(targets, sources)
		for j, i := range targets {
			rows[i].orderID = rows[sources[j]].orderID
		}
		inject(InjectDuplicates, "order_id", genOrderIDUnique, targets, 2*k)
		tr.Injected[len(tr.Injected)-1].Rows = sortedCopy(dupRows)
		// Other columns: one injection each, at independent rows.
		perm = r.Perm(n)
		at = pick(k)
		for _, i := range at {
			rows[i].quantity = float64(r.IntN(10)) + 0.5
		}
		inject(InjectBadFormat, "quantity", genQuantityInteger, at, k)
		perm = r.Perm(n)
		at = pick(k)
		bad := []string{"%s.%s(at)%s", "%s %s@%s", "%s.%s@", "N/A%.0s%.0s%.0s", "%s.%s@%s"}
		for _, i := range at {
			f := bad[r.IntN(len(bad))]
			e := fmt.Sprintf(f, genNames[r.IntN(len(genNames))], genNames[r.IntN(len(genNames))], genDomains[0])
			if f == "%s.%s@%s" {
				e = strings.ToUpper(e)
			}
			rows[i].email = e
		}
		inject(InjectBadFormat, "customer_email", genEmailFormat, at, k)
		perm = r.Perm(n)
		at = pick(k)
		unknown := []string{"PAID", "Shipped", "refunded", "unknown", "pending "}
		for _, i := range at {
			rows[i].status = unknown[r.IntN(len(unknown))]
		}
		inject(InjectNotInSet, "status", genStatusValid, at, k)
		perm = r.Perm(n)
		at = pick(k)
		for _, i := range at {
			rows[i].updated = rows[i].created.Add(-time.Duration(3600+r.IntN(71*3600)) * time.Second)
		}
		inject(InjectStale, "updated_at", genUpdatedAfter, at, k)
		perm = r.Perm(n)
		at = pick(k)
		for _, i := range at {
			rows[i].unitPrice = math.Round((500+4500*r.Float64())*100) / 100
		}
		inject(InjectOutliers, "unit_price", genUnitPriceOutlier, at, k)
	}

	errorRate := math.Round(0.02*r.Float64()*1000) / 1000
	req := Request{
		SourceID: fmt.Sprintf("orders-%s-%d", scenario, seed),
		Checks:   genChecks(),
		Signals: &Signals{
			ErrorRate:              &errorRate,
			LastUpdated:            ptrOf(newest.Format(time.RFC3339)),
			ExpectedUpdateInterval: ptrOf("1d"),
		},
		AsOf: ptrOf(asOf.Format(time.RFC3339)),
	}
	if format == FormatCSV {
		req.Data = &Data{CSV: ptrOf(genCSV(rows))}
	} else {
		req.Data = &Data{Records: genRecords(rows)}
	}
	tr.NewestAgeSeconds = lag.Seconds()
	tr.expect(n, errorRate, lag)
	return req, tr
}

func sortedCopy(a []int) []int {
	s := slices.Clone(a)
	slices.Sort(s)
	return s
}

func ptrOf[T any](v T) *T { return &v }

func genChecks() []Check {
	col := func(s string) *string { return &s }
	return []Check{
		{ID: col(genOrderIDNotNull), Type: CheckNotNull, Column: col("order_id")},
		{ID: col(genOrderIDUnique), Type: CheckUnique, Column: col("order_id")},
		{ID: col(genAmountNotNull), Type: CheckNotNull, Column: col("amount")},
		{ID: col(genAmountRange), Type: CheckBetween, Column: col("amount"), Min: ptrOf(0.0), Max: ptrOf(5000.0)},
		{ID: col(genQuantityInteger), Type: CheckType, Column: col("quantity"), Expected: col("integer")},
		{ID: col(genStatusValid), Type: CheckInSet, Column: col("status"), Values: []jsontext.Value{
			jsontext.Value(`"pending"`), jsontext.Value(`"paid"`), jsontext.Value(`"shipped"`), jsontext.Value(`"delivered"`), jsontext.Value(`"cancelled"`)}},
		{ID: col(genEmailFormat), Type: CheckRegex, Column: col("customer_email"), Pattern: col(`^[a-z0-9._]+@[a-z0-9.-]+\.[a-z]{2,}$`)},
		{ID: col(genUpdatedAfter), Type: CheckColumnComparison, Column: col("updated_at"), Operator: col(">="), Other: col("created_at")},
		{ID: col(genUnitPriceOutlier), Type: CheckOutliers, Column: col("unit_price"), Method: col("mad"), Severity: col("warning")},
		{ID: col(genCreatedFresh), Type: CheckFreshness, Column: col("created_at"), MaxAge: col("1d")},
		{ID: col(genRowCount), Type: CheckRowCountBetween, Min: ptrOf(100.0), Max: ptrOf(1_000_000.0)},
		{ID: col(genRequiredColumns), Type: CheckColumnsPresent, Columns: []string{"order_id", "amount", "created_at", "status"}},
	}
}

// expect fills the verdict from the planted counts.
func (tr *Truth) expect(n int, errorRate float64, lag time.Duration) {
	injected := map[string]int{}
	for _, in := range tr.Injected {
		injected[in.CheckID] = in.UnexpectedCount
		tr.FailingChecks = append(tr.FailingChecks, in.CheckID)
	}
	nf := float64(n)
	nulls := float64(injected[genAmountNotNull])
	d := Dimensions{
		// not_null checks on order_id and amount: 2n cells.
		Completeness: dim(1 - nulls/(2*nf)),
		// type (quantity), between (amount, non-null only), in_set (status), regex (email).
		Validity:    dim(1 - float64(injected[genQuantityInteger]+injected[genAmountRange]+injected[genStatusValid]+injected[genEmailFormat])/(4*nf-nulls)),
		Uniqueness:  dim(1 - float64(injected[genOrderIDUnique])/nf),
		Consistency: dim(1 - float64(injected[genUpdatedAfter])/nf),
		Timeliness:  dim(timelinessOf(lag.Seconds(), 86400)),
		Accuracy:    dim(math.Min(1-float64(injected[genUnitPriceOutlier])/nf, 1-errorRate)),
	}
	if lag > 24*time.Hour {
		tr.FailingChecks = append(tr.FailingChecks, genCreatedFresh)
	}
	// Request order.
	order := map[string]int{}
	for i, c := range genChecks() {
		order[*c.ID] = i
	}
	slices.SortFunc(tr.FailingChecks, func(a, b string) int { return order[a] - order[b] })
	tr.Dimensions = d
	s := Score(d)
	tr.Score = *s
	tr.Tier = TierOf(s)
	// The outliers check is a warning: it does not decide passed.
	tr.Passed = !slices.ContainsFunc(tr.FailingChecks, func(id string) bool { return id != genUnitPriceOutlier })
	tr.Gating = gate(s, tr.Passed, DefaultBlockBelow, DefaultReviewBelow)
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func genCSV(rows []genRow) string {
	var b strings.Builder
	b.WriteString(strings.Join(genColumns, ","))
	b.WriteByte('\n')
	for _, row := range rows {
		amount := ""
		if row.amount != nil {
			amount = fmtNum(*row.amount)
		}
		fields := []string{row.orderID, row.email, amount, fmtNum(row.quantity), fmtNum(row.unitPrice), row.status,
			row.created.Format(time.RFC3339), row.updated.Format(time.RFC3339)}
		for j, f := range fields {
			if j > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			b.WriteString(f)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func genRecords(rows []genRow) jsontext.Value {
	b := []byte{'['}
	str := func(name, v string) {
		b, _ = jsontext.AppendQuote(b, name)
		b = append(b, ':')
		b, _ = jsontext.AppendQuote(b, v)
	}
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		str("order_id", row.orderID)
		b = append(b, ',')
		str("customer_email", row.email)
		b = append(b, `,"amount":`...)
		if row.amount == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, *row.amount, 'f', -1, 64)
		}
		b = append(b, `,"quantity":`...)
		b = strconv.AppendFloat(b, row.quantity, 'f', -1, 64)
		b = append(b, `,"unit_price":`...)
		b = strconv.AppendFloat(b, row.unitPrice, 'f', -1, 64)
		b = append(b, ',')
		str("status", row.status)
		b = append(b, ',')
		str("created_at", row.created.Format(time.RFC3339))
		b = append(b, ',')
		str("updated_at", row.updated.Format(time.RFC3339))
		b = append(b, '}')
	}
	return append(b, ']')
}
