package meridian_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"riskapi/meridian"
)

// A price feed sent as CSV: one price is missing and one is negative. Both checks (of the
// default severity, error) fail, so the source does not pass and is gated for review; each
// result says how many rows failed and which.
func ExampleAnalyze() {
	csv := "sku,price\nA1,9.99\nA2,\nA3,-4.00\nA4,12.50\n"
	col, zero := "price", 0.0
	req := meridian.Request{
		SourceID: "supplier/prices",
		Data:     &meridian.Data{CSV: &csv},
		Checks: []meridian.Check{
			{Type: meridian.CheckNotNull, Column: &col},
			{Type: meridian.CheckBetween, Column: &col, Min: &zero},
		},
		Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
	}
	res, err := meridian.Analyze(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Passed, res.Gating)
	for _, c := range res.Checks {
		fmt.Println(c.Type, c.Success, *c.UnexpectedCount, c.PartialUnexpectedIndexList)
	}
	// Output:
	// false review
	// not_null false 1 [1]
	// between false 1 [2]
}

// A large file need not be held as text: a streaming caller feeds a Dataset row by row and
// hands it to Analyze in place of Data.
func ExampleDataset() {
	ds := meridian.NewDataset()
	if err := ds.ReadCSV(strings.NewReader("id\n1\n2\n2\n"), ','); err != nil {
		fmt.Println(err)
		return
	}
	col := "id"
	res, err := meridian.Analyze(context.Background(), meridian.Request{
		SourceID: "ids",
		Checks:   []meridian.Check{{Type: meridian.CheckUnique, Column: &col}},
		Dataset:  ds,
		Now:      time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Checks[0].Success, *res.Checks[0].UnexpectedCount, res.Profile.RowCount)
	// Output:
	// false 2 3
}
