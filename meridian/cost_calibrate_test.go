package meridian

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/enginetest"
)

// calibrationTable writes rows rows of a table whose columns isolate the loops of the cost
// model: id (distinct strings, one null last), num and num2 (distinct decimals), cat (ten
// values), cat2 (ten values), ts and ts2 (distinct timestamps), txt (distinct 60-character
// strings), flag ("y", "n" on the last row: a row check that scans every row).
func calibrationTable(rows int) []byte {
	var b bytes.Buffer
	b.WriteString("id,num,num2,cat,cat2,ts,ts2,txt,flag\n")
	r := rand.New(rand.NewPCG(7, 7))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		if i < rows-1 {
			b.WriteString("k" + strconv.Itoa(i))
		}
		fmt.Fprintf(&b, ",%d.%02d,%d.%02d,c%d,d%d,", i, r.IntN(100), rows-i, r.IntN(100), r.IntN(10), r.IntN(10))
		b.WriteString(t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339))
		b.WriteByte(',')
		b.WriteString(t0.Add(time.Duration(i)*time.Second + time.Hour).Format(time.RFC3339))
		b.WriteByte(',')
		b.WriteString(strings.Repeat("x", 52) + strconv.Itoa(10_000_000+i))
		if i < rows-1 {
			b.WriteString(",y\n")
		} else {
			b.WriteString(",n\n")
		}
	}
	return b.Bytes()
}

// calibrationCase is one measurement: a request on a fresh read of the data, and the count
// of the loop iterations whose constant it measures.
type calibrationCase struct {
	name   string
	checks []Check
	reps   int // the request's checks are repeated reps times
	units  func(ds *Dataset) float64
	minus  func(ds *Dataset) float64 // ns of the other loops, from the model
	// data is the CSV the case reads (the calibration table when nil); inline cases send it
	// as data.csv (reading included), csv as a fed Dataset (reading excluded).
	data    []byte
	inline  bool
	records bool
	profile bool
	runs    int // Analyze runs per measurement (1 when 0)
}

// TestCalibrateCost measures the constants of the cost model: each case isolates a loop,
// runs it for 50–400 ms of CPU five times on a fresh dataset, and prints the median CPU per
// iteration. Run it with COST_CALIBRATE=1 on a quiet machine.
func TestCalibrateCost(t *testing.T) {
	if os.Getenv("COST_CALIBRATE") == "" {
		t.Skip("set COST_CALIBRATE=1 to measure the cost model's constants")
	}
	const rows = 400_000
	csv := calibrationTable(rows)
	col := func(s string) *string { return &s }
	n := func(name string) func(ds *Dataset) float64 {
		return func(ds *Dataset) float64 { return float64(ds.column(name).dict.size()) }
	}
	rowsOf := func(ds *Dataset) float64 { return float64(ds.rows) }
	none := func(*Dataset) float64 { return 0 }
	members := make([]jsontext.Value, 2000)
	for i := range members {
		members[i] = jsontext.Value(strconv.Quote("m" + strconv.Itoa(i)))
	}
	cases := []calibrationCase{
		isolate("costScanRow (not_null, one null last)", []Check{{Type: CheckNotNull, Column: col("id")}}, 40, rowsOf, none),
		isolate("costDistinct (unique, all distinct)", []Check{{Type: CheckUnique, Column: col("num")}}, 40, n("num"), none),
		isolate("costInSetMember (in_set of 2,000)", []Check{{Type: CheckInSet, Column: col("cat"), Values: members}}, 100,
			func(*Dataset) float64 { return float64(len(members)) }, none),
		isolate("costRuneByte (length_between)", []Check{{Type: CheckLengthBetween, Column: col("txt"), Min: ptrOf(1.0)}}, 20,
			func(ds *Dataset) float64 { return float64(ds.column("txt").dict.size() * 60) },
			func(ds *Dataset) float64 { return n("txt")(ds) * costDistinct }),
		isolate("costKeyRow (compound_unique of one column)", []Check{{Type: CheckCompoundUnique, Columns: []string{"num"}}}, 20, rowsOf, none),
		isolate("costCompareRow (column_comparison of numbers)", []Check{{Type: CheckColumnComparison, Column: col("num"), Operator: col("<"), Other: col("num2")}}, 10, rowsOf, none),
		isolate("costParseTime (freshness)", []Check{{Type: CheckFreshness, Column: col("ts"), MaxAge: col("1d")}}, 1, n("ts"),
			func(ds *Dataset) float64 { return n("ts")(ds) * costDistinct }),
		isolate("costSortValue (statistic_between: m·log2 m)", []Check{{Type: CheckStatisticBetween, Column: col("num"), Statistic: col("mean")}}, 1,
			func(ds *Dataset) float64 { m := n("num")(ds); return m * math.Log2(m+1) },
			func(ds *Dataset) float64 { return 2 * n("num")(ds) * costDistinct }),
		isolate("costMADValue (outliers mad after the summary: m·log2 m)", []Check{{Type: CheckOutliers, Column: col("num"), Method: col("mad")}}, 10,
			func(ds *Dataset) float64 { m := n("num")(ds); return m * math.Log2(m+1) },
			func(ds *Dataset) float64 {
				m := n("num")(ds)
				return (2*m*costDistinct+m*costSortValue*math.Log2(m+1))/10 + m*costDistinct + rowsOf(ds)*costScanRow
			}),
		isolate("costPairRow (compound_unique of two ten-value columns)", []Check{{Type: CheckCompoundUnique, Columns: []string{"cat", "cat2"}}}, 20, rowsOf,
			func(ds *Dataset) float64 { return rowsOf(ds) * costKeyRow }),
		isolate("costPairNew (compound_unique of two distinct columns)", []Check{{Type: CheckCompoundUnique, Columns: []string{"num", "num2"}}}, 3, rowsOf,
			func(ds *Dataset) float64 { return rowsOf(ds) * (costKeyRow + costPairRow) }),
		{name: "costCheck (row_count_between)", checks: []Check{{Type: CheckRowCountBetween, Min: ptrOf(1.0)}}, reps: 100, runs: 200,
			units: func(*Dataset) float64 { return 1 }, minus: none, data: repeatedCSV(10, 8, 1)},
		{name: "costProfileColumn (profile of 1,000 columns of ten numbers)", reps: 0, runs: 50, profile: true,
			units: func(*Dataset) float64 { return 1000 }, minus: none, data: numbersCSV(10, 1000)},
		{name: "costAnalyze (inline CSV of one row and column)", reps: 0, runs: 5000, inline: true,
			units: func(*Dataset) float64 { return 1 }, minus: none, data: repeatedCSV(1, 1, 1)},
		{name: "costReadColumn (inline CSV of 1,000 columns × 2 rows)", reps: 0, runs: 50, inline: true,
			units: func(*Dataset) float64 { return 1000 }, minus: func(*Dataset) float64 { return costAnalyze }, data: repeatedCSV(2, 1000, 1)},
		isolate("costCompareByte (column_comparison of equal strings)", []Check{{Type: CheckColumnComparison, Column: col("txt"), Operator: col("=="), Other: col("txt")}}, 10,
			func(ds *Dataset) float64 { return rowsOf(ds) * 60 }, func(ds *Dataset) float64 { return rowsOf(ds) * costCompareRow }),
		{name: "costProfileValue (profile of distinct strings)", reps: 1, units: func(ds *Dataset) float64 { return float64(ds.column("id").dict.size()) },
			minus: func(ds *Dataset) float64 {
				return costProfileColumn + float64(ds.column("id").dict.size())*8*costRuneByte
			}, data: onlyColumns(csv, 0), profile: true},
		{name: "costCSVByte (inline CSV of long repeated values)", reps: 1, units: byteCount(repeatedCSV(200_000, 8, 200)),
			minus: func(ds *Dataset) float64 { return rowsOf(ds) * 8 * costCSVField }, data: repeatedCSV(200_000, 8, 200), inline: true},
		{name: "costCSVField (inline CSV of short repeated values)", reps: 1, units: func(ds *Dataset) float64 { return rowsOf(ds) * 40 },
			minus: func(ds *Dataset) float64 { return rowsOf(ds) * 40 * 2 * costCSVByte }, data: repeatedCSV(100_000, 40, 1), inline: true},
		{name: "costCSVNew (inline CSV of distinct values)", reps: 1, units: func(ds *Dataset) float64 { return distinctOf(ds) },
			minus: func(ds *Dataset) float64 { return rowsOf(ds)*8*costCSVField + 9*rowsOf(ds)*8*costCSVByte }, data: onlyColumns(csv, 0, 1, 2, 5, 6, 7), inline: true},
		{name: "costJSONByte (inline records of long repeated values)", reps: 1, units: byteCount(csvRecords(repeatedCSV(100_000, 8, 200), false)),
			minus: func(ds *Dataset) float64 { return rowsOf(ds) * 8 * costJSONField }, data: repeatedCSV(100_000, 8, 200), inline: true, records: true},
		{name: "costJSONField (inline records of short repeated values)", reps: 1, units: func(ds *Dataset) float64 { return rowsOf(ds) * 40 },
			minus: func(ds *Dataset) float64 { return rowsOf(ds) * 40 * 10 * costJSONByte }, data: repeatedCSV(50_000, 40, 1), inline: true, records: true},
		{name: "costJSONNew (inline records of distinct values)", reps: 1, units: func(ds *Dataset) float64 { return distinctOf(ds) },
			minus: func(ds *Dataset) float64 { return rowsOf(ds)*6*costJSONField + 27*rowsOf(ds)*6*costJSONByte }, data: onlyColumns(csv, 0, 1, 2, 5, 6, 7), inline: true, records: true},
	}
	for _, c := range cases {
		data := csv
		if c.data != nil {
			data = c.data
		}
		var per []float64
		for range 5 {
			ds := NewDataset()
			if err := ds.ReadCSV(bytes.NewReader(data), ','); err != nil {
				t.Fatal(err)
			}
			req := Request{SourceID: "calibration", Dataset: ds, Profile: ptrOf(c.profile), Now: testNow, Budget: time.Hour}
			if c.inline {
				req.Dataset = nil
				if c.records {
					req.Data = &Data{Records: csvRecords(data, false)}
				} else {
					req.Data = &Data{CSV: ptrOf(string(data))}
				}
			}
			for range c.reps {
				for _, ch := range c.checks {
					ch.ID = ptrOf("c" + strconv.Itoa(len(req.Checks)))
					req.Checks = append(req.Checks, ch)
				}
			}
			runs := max(c.runs, 1)
			cpu := enginetest.MeasureCPU(t, func() {
				for range runs {
					if _, err := analyzeAt(req, testNow); err != nil {
						t.Fatal(err)
					}
				}
			})
			if req.Dataset == nil {
				ds = NewDataset()
				if err := ds.readInline(context.Background(), req.Data); err != nil {
					t.Fatal(err)
				}
			}
			reps := float64(max(c.reps, 1))
			other := float64(c.reps) * (c.minus(ds) + costCheck)
			if c.reps == 0 || c.name[:len("costCheck ")] == "costCheck " {
				other = c.minus(ds)
			}
			per = append(per, (float64(cpu)/float64(runs)-other)/(reps*c.units(ds)))
		}
		slices.Sort(per)
		t.Logf("%-50s %8.2f ns (runs %.2f … %.2f)", c.name, per[2], per[0], per[4])
	}
}

// header writes a CSV header of cols columns c0, c1, ….
func header(b *bytes.Buffer, cols int) {
	for j := range cols {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString("c" + strconv.Itoa(j))
	}
	b.WriteByte('\n')
}

// repeatedCSV is rows rows of cols columns, every field the same string of width bytes.
func repeatedCSV(rows, cols, width int) []byte {
	var b bytes.Buffer
	header(&b, cols)
	line := strings.TrimSuffix(strings.Repeat(strings.Repeat("v", width)+",", cols), ",") + "\n"
	for range rows {
		b.WriteString(line)
	}
	return b.Bytes()
}

// numbersCSV is rows rows of cols columns of distinct numbers.
func numbersCSV(rows, cols int) []byte {
	var b bytes.Buffer
	header(&b, cols)
	for i := range rows {
		for j := range cols {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(i*cols + j))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// onlyColumns keeps the columns js of csv.
func onlyColumns(csv []byte, js ...int) []byte {
	var b bytes.Buffer
	for _, line := range bytes.SplitAfter(csv, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		fields := bytes.Split(bytes.TrimSuffix(line, []byte("\n")), []byte(","))
		for i, j := range js {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(fields[j])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// isolate is a case on the calibration table, fed as a Dataset, without the profile.
func isolate(name string, checks []Check, reps int, units, minus func(*Dataset) float64) calibrationCase {
	return calibrationCase{name: name, checks: checks, reps: reps, units: units, minus: minus}
}

func distinctOf(ds *Dataset) float64 {
	n := 0
	for _, c := range ds.cols {
		n += c.dict.size()
	}
	return float64(n)
}

func byteCount(b []byte) func(*Dataset) float64 {
	return func(*Dataset) float64 { return float64(len(b)) }
}

// TestCalibrateRegex prints, for every pattern family and value length, the measured CPU
// of the check against the model's estimate (the regex constants are fitted to these).
func TestCalibrateRegex(t *testing.T) {
	if os.Getenv("COST_CALIBRATE") == "" {
		t.Skip("set COST_CALIBRATE=1 to measure the cost model's constants")
	}
	for _, f := range regexFamilies {
		for _, n := range []int{16, 200, 2_000, 20_000, 200_000} {
			sh := analyzeRegex(f.pattern)
			one, _ := sh.matchNanos(n)
			count := int(max(1, min(50_000, 100e6/one, 20e6/float64(n))))
			req := regexCase{f, n, count}.request(t)
			est, err := Estimate(req)
			if err != nil {
				t.Fatal(err)
			}
			var runs []float64
			for range 3 {
				cpu := enginetest.MeasureCPU(t, func() {
					if _, err := Analyze(context.Background(), req); err != nil {
						t.Fatal(err)
					}
				})
				runs = append(runs, float64(cpu))
				req.Dataset.cols[0].stats, req.Dataset.cols[0].times = nil, nil
			}
			slices.Sort(runs)
			t.Logf("%-34s n=%-7d ×%-6d threads=%7.1f steps=%-5d onepass=%-5v est %10.2fms meas %10.2fms ratio %.2f",
				f.name, n, count, sh.threads, sh.steps, sh.onepass, float64(est.CPU)/1e6, runs[1]/1e6, float64(est.CPU)/runs[1])
		}
	}
}
