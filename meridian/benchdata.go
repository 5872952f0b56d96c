package meridian

import (
	"bufio"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// The benchmark data set: an orders table with about 1 % of each kind of error, and the 10
// checks that the engine benchmarks, the pandas comparison (testdata/pandas_bench.py) and the
// HTTP end-to-end benchmark all run. 1,000,000 rows are about 62 MB of CSV, so the request
// that carries them stays within the default 64 MiB body limit.

// OrdersAsOf is the as_of of the benchmark request.
var OrdersAsOf = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// WriteOrdersCSV writes rows rows of a 6-column orders table (id, email, amount, quantity,
// status, created_at) with about 1 % of each kind of error: null and duplicate ids, null
// and out-of-range amounts, non-integer quantities, unknown statuses, malformed emails.
func WriteOrdersCSV(w io.Writer, rows int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 42))
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("id,email,amount,quantity,status,created_at\n")
	statuses := []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	start := OrdersAsOf.Add(-90 * 24 * time.Hour).Unix()
	step := float64(90*24*3600-600) / float64(rows)
	var b []byte
	for i := 0; i < rows; i++ {
		b = b[:0]
		switch u := r.Float64(); {
		case u < 0.005: // null id
		case u < 0.01 && i > 0: // duplicate id
			b = append(b, "ord-"...)
			b = strconv.AppendInt(b, int64(r.IntN(i)), 10)
		default:
			b = append(b, "ord-"...)
			b = strconv.AppendInt(b, int64(i), 10)
		}
		b = append(b, ',')
		if r.Float64() < 0.01 {
			b = append(b, "u"...)
			b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
			b = append(b, "(at)ex.com"...)
		} else {
			b = append(b, "u"...)
			b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
			b = append(b, "@ex.com"...)
		}
		b = append(b, ',')
		switch u := r.Float64(); {
		case u < 0.01: // null amount
		case u < 0.015:
			b = strconv.AppendFloat(b, -1-float64(r.IntN(100)), 'f', 2, 64)
		case u < 0.02:
			b = strconv.AppendFloat(b, 6000+float64(r.IntN(100000))/100, 'f', 2, 64)
		default:
			b = strconv.AppendFloat(b, 5+float64(r.IntN(49500))/100, 'f', 2, 64)
		}
		b = append(b, ',')
		if r.Float64() < 0.01 {
			b = strconv.AppendFloat(b, 0.5+float64(r.IntN(10)), 'f', 1, 64)
		} else {
			b = strconv.AppendInt(b, int64(1+r.IntN(10)), 10)
		}
		b = append(b, ',')
		if r.Float64() < 0.01 {
			b = append(b, "PAID"...)
		} else {
			b = append(b, statuses[r.IntN(len(statuses))]...)
		}
		b = append(b, ',')
		ts := time.Unix(start+int64(float64(i)*step), 0).UTC()
		b = ts.AppendFormat(b, time.RFC3339)
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// OrdersChecks are the 10 checks of the benchmarks (and of testdata/pandas_bench.py).
func OrdersChecks() []Check {
	return []Check{
		{ID: ptrOf("id_not_null"), Type: CheckNotNull, Column: ptrOf("id")},
		{ID: ptrOf("id_unique"), Type: CheckUnique, Column: ptrOf("id")},
		{ID: ptrOf("amount_not_null"), Type: CheckNotNull, Column: ptrOf("amount")},
		{ID: ptrOf("amount_range"), Type: CheckBetween, Column: ptrOf("amount"), Min: ptrOf(0.0), Max: ptrOf(5000.0)},
		{ID: ptrOf("quantity_integer"), Type: CheckType, Column: ptrOf("quantity"), Expected: ptrOf("integer")},
		{ID: ptrOf("status_known"), Type: CheckInSet, Column: ptrOf("status"), Values: ordersValues(`"pending"`, `"paid"`, `"shipped"`, `"delivered"`, `"cancelled"`)},
		{ID: ptrOf("email_format"), Type: CheckRegex, Column: ptrOf("email"), Pattern: ptrOf(`^[a-z0-9._]+@[a-z0-9.-]+\.[a-z]{2,}$`)},
		{ID: ptrOf("amount_outliers"), Type: CheckOutliers, Column: ptrOf("amount"), Method: ptrOf("iqr"), Severity: ptrOf("warning")},
		{ID: ptrOf("created_fresh"), Type: CheckFreshness, Column: ptrOf("created_at"), MaxAge: ptrOf("1d")},
		{ID: ptrOf("amount_mean"), Type: CheckStatisticBetween, Column: ptrOf("amount"), Statistic: ptrOf("mean"), Min: ptrOf(100.0), Max: ptrOf(1000.0)},
	}
}

func ordersValues(vs ...string) []jsontext.Value {
	out := make([]jsontext.Value, len(vs))
	for i, v := range vs {
		out[i] = jsontext.Value(v)
	}
	return out
}
