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

// A Great Expectations suite, as GE 1.x exports it, runs as it is. Its between expectation
// counts among the non-null fares, as GE does: one of two (50 %) is out of range, more than
// mostly 0.6 allows, so it fails although it is one row of three.
func ExampleRequest_expectationSuite() {
	csv := "id,fare\n1,10\n2,\n3,-5\n"
	req := meridian.Request{
		SourceID: "trips",
		Data:     &meridian.Data{CSV: &csv},
		ExpectationSuite: []byte(`{"name": "trips", "expectations": [
			{"type": "expect_column_values_to_be_between",
			 "kwargs": {"column": "fare", "min_value": 0, "mostly": 0.6}, "meta": {}, "id": "fare_positive"},
			{"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}, "meta": {}}],
			"meta": {"great_expectations_version": "1.3.5"}}`),
		Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
	}
	res, err := meridian.Analyze(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Checks {
		fmt.Println(c.ID, c.Type, c.Success, *c.UnexpectedCount, *c.UnexpectedPercent, *c.UnexpectedPercentTotal)
	}
	fmt.Println(res.MethodVersion)
	// Output:
	// fare_positive between false 1 50 33.333333333333336
	// expectation_1 unique true 0 0 0
	// meridian/2
}
